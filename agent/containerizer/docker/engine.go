package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The Engine API endpoints the containerizer uses, as thin wrappers.

// Labels put on every container, so that a restarted agent finds its own
// containers (and only its own: several agents may share one engine).
const (
	labelOwner     = "org.mezzo.owner"        // the agent instance (Config.Owner)
	labelContainer = "org.mezzo.container_id" // the Mesos container ID
	labelSandbox   = "org.mezzo.sandbox"      // the host sandbox directory
)

// createBody is the body of POST /containers/create (the fields we use).
type createBody struct {
	Hostname     string              `json:",omitempty"`
	User         string              `json:",omitempty"`
	Env          []string            `json:",omitempty"`
	Cmd          []string            `json:",omitempty"`
	Entrypoint   []string            `json:",omitempty"`
	Image        string              `json:""`
	Labels       map[string]string   `json:",omitempty"`
	WorkingDir   string              `json:",omitempty"`
	ExposedPorts map[string]struct{} `json:",omitempty"`
	StopSignal   string              `json:",omitempty"`
	HostConfig   hostConfig          `json:""`
}

type hostConfig struct {
	Binds             []string                 `json:",omitempty"`
	NetworkMode       string                   `json:",omitempty"`
	PortBindings      map[string][]portBinding `json:",omitempty"`
	Privileged        bool                     `json:",omitempty"`
	CpuShares         int64                    `json:",omitempty"`
	CpuPeriod         int64                    `json:",omitempty"`
	CpuQuota          int64                    `json:",omitempty"`
	CpusetCpus        string                   `json:",omitempty"`
	Memory            int64                    `json:",omitempty"`
	MemoryReservation int64                    `json:",omitempty"`
	MemorySwap        int64                    `json:",omitempty"`
	OomScoreAdj       int                      `json:",omitempty"`
	OomKillDisable    *bool                    `json:",omitempty"`
	PidsLimit         int64                    `json:",omitempty"`
	VolumeDriver      string                   `json:",omitempty"`
	CapAdd            []string                 `json:",omitempty"`
	CapDrop           []string                 `json:",omitempty"`
	Dns               []string                 `json:",omitempty"`
	DnsSearch         []string                 `json:",omitempty"`
	DnsOptions        []string                 `json:",omitempty"`
	ExtraHosts        []string                 `json:",omitempty"`
	SecurityOpt       []string                 `json:",omitempty"`
	GroupAdd          []string                 `json:",omitempty"`
	ShmSize           int64                    `json:",omitempty"`
	Ulimits           []ulimit                 `json:",omitempty"`
	Init              *bool                    `json:",omitempty"`
	ReadonlyRootfs    bool                     `json:",omitempty"`
	PidMode           string                   `json:",omitempty"`
	IpcMode           string                   `json:",omitempty"`
	Devices           []device                 `json:",omitempty"`
	Sysctls           map[string]string        `json:",omitempty"`
	Tmpfs             map[string]string        `json:",omitempty"`
	LogConfig         *logConfig               `json:",omitempty"`
}

type portBinding struct {
	HostIP   string `json:"HostIp"`
	HostPort string
}

type ulimit struct {
	Name string
	Soft int64
	Hard int64
}

type device struct {
	PathOnHost        string
	PathInContainer   string
	CgroupPermissions string
}

type logConfig struct {
	Type   string
	Config map[string]string `json:",omitempty"`
}

// containerJSON is the part of GET /containers/{id}/json we read.
type containerJSON struct {
	ID    string `json:"Id"`
	Name  string
	State struct {
		Status     string
		Running    bool
		ExitCode   int
		OOMKilled  bool
		Error      string
		StartedAt  string
		FinishedAt string
		Pid        int
	}
	Config struct {
		Image      string
		Labels     map[string]string
		Env        []string
		StopSignal string
	}
	HostConfig struct {
		CpuShares   int64
		CpuQuota    int64
		CpuPeriod   int64
		Memory      int64
		NetworkMode string
		Binds       []string
		Privileged  bool
	}
	NetworkSettings struct {
		IPAddress string
		Ports     map[string][]portBinding
	}
}

// containerSummary is one entry of GET /containers/json.
type containerSummary struct {
	ID     string `json:"Id"`
	Names  []string
	State  string
	Labels map[string]string
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// imagePresent reports whether the engine has the image locally.
func (c *client) imagePresent(ctx context.Context, image string) (bool, error) {
	err := c.call(ctx, http.MethodGet, "/images/"+image+"/json", nil, nil, nil)
	if err == nil {
		return true, nil
	}
	if isStatus(err, http.StatusNotFound) {
		return false, nil
	}
	return false, err
}

// pullRef splits an image reference into POST /images/create's fromImage
// and tag: without a tag the engine would pull every tag, so "latest" is
// made explicit, as the docker CLI does.
func pullRef(image string) (from, tag string) {
	if i := strings.Index(image, "@"); i >= 0 {
		return image[:i], image[i+1:]
	}
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[:i], image[i+1:]
	}
	return image, "latest"
}

// pull fetches the image. The engine answers 200 and streams JSON
// progress; a failure arrives as an "error" member in the stream.
func (c *client) pull(ctx context.Context, image string) error {
	from, tag := pullRef(image)
	resp, err := c.do(ctx, http.MethodPost, "/images/create", url.Values{"fromImage": {from}, "tag": {tag}}, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading the pull progress: %w", err)
		}
		if msg.Error != "" {
			return fmt.Errorf("%s", msg.Error)
		}
	}
}

func (c *client) create(ctx context.Context, name string, body *createBody) (string, error) {
	var out struct {
		ID string `json:"Id"`
	}
	if err := c.call(ctx, http.MethodPost, "/containers/create", url.Values{"name": {name}}, body, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

func (c *client) start(ctx context.Context, id string) error {
	err := c.call(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil, nil)
	return err
}

// wait blocks until the container is not running and returns its exit
// code.
func (c *client) wait(ctx context.Context, id string) (int, error) {
	var out struct {
		StatusCode int
		Error      *struct{ Message string }
	}
	if err := c.call(ctx, http.MethodPost, "/containers/"+id+"/wait", url.Values{"condition": {"not-running"}}, nil, &out); err != nil {
		return 0, err
	}
	if out.Error != nil && out.Error.Message != "" {
		return out.StatusCode, fmt.Errorf("%s", out.Error.Message)
	}
	return out.StatusCode, nil
}

// kill sends a signal; a container that is not running (409) or gone
// (404) is not an error: the goal is that it does not run.
func (c *client) kill(ctx context.Context, id, signal string) error {
	err := c.call(ctx, http.MethodPost, "/containers/"+id+"/kill", url.Values{"signal": {signal}}, nil, nil)
	if isStatus(err, http.StatusConflict) || isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

func (c *client) inspect(ctx context.Context, id string) (*containerJSON, error) {
	var out containerJSON
	if err := c.call(ctx, http.MethodGet, "/containers/"+id+"/json", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// remove deletes a container (forcibly, with its anonymous volumes); a
// container already gone is not an error.
func (c *client) remove(ctx context.Context, id string) error {
	err := c.call(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// list returns all containers (running or not) with the given label
// (key=value).
func (c *client) list(ctx context.Context, label string) ([]containerSummary, error) {
	f, _ := json.Marshal(map[string][]string{"label": {label}})
	var out []containerSummary
	err := c.call(ctx, http.MethodGet, "/containers/json", url.Values{"all": {"1"}, "filters": {string(f)}}, nil, &out)
	return out, err
}

// logs opens the container's multiplexed stdout/stderr stream, following
// it until the container stops, each frame prefixed with its timestamp.
// since (if non-zero) skips entries logged before it.
func (c *client) logs(ctx context.Context, id string, since time.Time) (io.ReadCloser, error) {
	q := url.Values{"follow": {"1"}, "stdout": {"1"}, "stderr": {"1"}, "timestamps": {"1"}}
	if !since.IsZero() {
		q.Set("since", fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()))
	}
	resp, err := c.do(ctx, http.MethodGet, "/containers/"+id+"/logs", q, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// statsJSON is the part of GET /containers/{id}/stats we read.
type statsJSON struct {
	Read     string `json:"read"`
	CPUStats struct {
		CPUUsage struct {
			TotalUsage        uint64 `json:"total_usage"`
			UsageInKernelmode uint64 `json:"usage_in_kernelmode"`
			UsageInUsermode   uint64 `json:"usage_in_usermode"`
		} `json:"cpu_usage"`
	} `json:"cpu_stats"`
	MemoryStats struct {
		Usage uint64            `json:"usage"`
		Limit uint64            `json:"limit"`
		Stats map[string]uint64 `json:"stats"`
	} `json:"memory_stats"`
	PidsStats struct {
		Current uint64 `json:"current"`
	} `json:"pids_stats"`
}

func (c *client) stats(ctx context.Context, id string) (*statsJSON, error) {
	var out statsJSON
	err := c.call(ctx, http.MethodGet, "/containers/"+id+"/stats", url.Values{"stream": {"0"}}, nil, &out)
	return &out, err
}
