package run

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"strings"
	"time"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/internal/authn"
	"mezzo/internal/clock"
)

// Defaults, as mesos-execute has them where it has one.
const (
	DefaultResources = "cpus:0.1;mem:32"
	DefaultName      = "mezzo-run"
	DefaultRole      = "*"
	// DeclineSeconds is the filter on offers declined once the task has
	// been launched: the framework needs nothing more.
	DeclineSeconds = 3600
)

// Options says what to run and where.
type Options struct {
	// Masters are the masters' "host:port" addresses.
	Masters []string
	// Command is the argv to run. With Shell and a single element, that
	// element is a shell command line run by `sh -c`.
	Command []string
	// Shell runs the command through the shell (CommandInfo.shell=true).
	// Several elements are joined with spaces into one command line.
	Shell bool
	// Resources the task needs, in Mesos text form (default
	// "cpus:0.1;mem:32").
	Resources string
	// Task, when set, is the task to launch instead of Command, Shell and
	// Resources (mesos-execute --task; see ParseTask): Run launches it as
	// given on the first offer holding its resources, with agent_id set
	// from the offer and name and task_id defaulting to Name and TaskID.
	Task *mesos.TaskInfo
	// Name of the framework and of the task (default "mezzo-run").
	Name string
	// TaskID overrides the task id. The default is Name followed by a
	// random suffix ("mezzo-run-3f9c2a1b"), so two runs never collide
	// (mesos-execute uses the name itself, which made every second run of
	// the same command a duplicate).
	TaskID string
	// Env adds environment variables to the command, "NAME=VALUE" each
	// (mesos-execute --env gives them as a JSON object).
	Env []string
	// DockerImage runs the command in this image under the docker
	// containerizer (mesos-execute --docker_image).
	DockerImage string
	// Output, when set, follows the task's stdout and stderr from the
	// moment it runs until it ends (see Output).
	Output Output
	// Revocable runs the task on revocable cpus (docs/oversubscription.md):
	// the framework subscribes with REVOCABLE_RESOURCES and takes the
	// task's cpus from revocable resources (an agent's estimated slack or
	// a lent reservation) and every other resource (mem, disk) from
	// regular ones, as Mesos lets a task mix them by name. Resources must
	// then be scalar quantities with cpus. With a task file, only the
	// capability is added: the file marks its revocable resources itself.
	// The task may be killed whenever the agent needs the cpus back.
	Revocable bool
	// Role the framework subscribes with (default "*").
	Role string
	// User the task runs as (default: the current user).
	User string
	// Checkpoint asks agents to checkpoint the task, so it survives an
	// agent restart.
	Checkpoint bool
	// Codec for the scheduler API (default protobuf).
	Codec codec.MediaType
	// Out receives the status lines (default os.Stdout). With Output set,
	// callers usually send them to stderr, leaving stdout to the task.
	Out io.Writer
	// Log receives progress notes (subscribed, launching); default none.
	Log io.Writer
	// Timeout bounds the whole run (0 = none). On expiry the framework is
	// torn down, which kills the task, and Run returns ExitFailed.
	Timeout time.Duration

	// Credential, when set, authenticates the framework (and the reads
	// that follow its task) with masters that require it; the framework's
	// principal is its principal.
	Credential *authn.Credential

	// Clock and HTTPClient are for tests and TLS (defaults: real, plain
	// HTTP).
	Clock      clock.Clock
	HTTPClient *http.Client
}

func (o *Options) validate() error {
	if len(o.Masters) == 0 {
		return errors.New("no master address given")
	}
	switch {
	case o.Task != nil && len(o.Command) > 0:
		return errors.New("give either a task file or a command, not both")
	case o.Task != nil && o.Shell:
		return errors.New("the shell option applies to a command, not a task file (set command.shell in it)")
	case o.Task != nil && o.Resources != "":
		return errors.New("a task file carries its own resources; leave the resources option out")
	case o.Task == nil && (len(o.Command) == 0 || strings.TrimSpace(strings.Join(o.Command, " ")) == ""):
		return errors.New("no command given")
	}
	if o.Resources == "" {
		o.Resources = DefaultResources
	}
	if o.Revocable && o.Task == nil {
		if _, err := revocableNeed(o.Resources); err != nil {
			return err
		}
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.TaskID == "" {
		o.TaskID = o.Task.GetTaskId().GetValue()
	}
	if o.TaskID == "" {
		o.TaskID = o.Name + "-" + randomSuffix()
	}
	for _, kv := range o.Env {
		if i := strings.IndexByte(kv, '='); i <= 0 {
			return fmt.Errorf("environment variable %q: expecting NAME=VALUE", kv)
		}
	}
	if o.Task != nil && (len(o.Env) > 0 || o.DockerImage != "") {
		return errors.New("a task file carries its own environment and container; leave the env and docker image options out")
	}
	if o.Role == "" {
		o.Role = DefaultRole
	}
	if o.User == "" {
		o.User = currentUser()
	}
	if o.Codec == "" {
		o.Codec = codec.Protobuf
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Credential != nil {
		// Every request of the run presents it: the scheduler API's and
		// the reads that explain a wait.
		hc := http.Client{}
		if o.HTTPClient != nil {
			hc = *o.HTTPClient
		}
		hc.Transport = o.Credential.Transport(hc.Transport)
		o.HTTPClient = &hc
	}
	return nil
}

// randomSuffix is 8 hex digits from crypto/rand.
func randomSuffix() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "root"
}
