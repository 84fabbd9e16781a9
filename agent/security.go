package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/httpapi"
	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/internal/exectoken"
)

// The agent's part of security (docs/security.md):
//
//   - Executors run as their user (--switch_user): runAs resolves the
//     user an executor runs as (CommandInfo.user, else FrameworkInfo.user)
//     to its IDs, the containerizer starts the process with them and the
//     sandbox is handed to that user (giveSandbox). A user unknown on this
//     host fails the launch with a message naming it.
//   - Executors authenticate (--authenticate_http_executors): each
//     executor the agent starts gets a token (exectoken, signed with
//     --executor_secret_key) bound to its framework, executor and
//     container IDs in MESOS_EXECUTOR_AUTHENTICATION_TOKEN, and every
//     executor API call must present the token of the executor it names.

// executorTokenLifetime is how long an executor's token is valid. Mesos's
// tokens never expire; mezzo's carry an expiry (a token without one is
// refused) so far out that no executor outlives it.
const executorTokenLifetime = 10 * 365 * 24 * time.Hour

// executorUser is the user an executor runs as: its command's user, else
// its framework's ("" when neither is set).
func executorUser(fw *framework, info *mesos.ExecutorInfo) string {
	if c := info.GetCommand(); c != nil && c.User != nil {
		return c.GetUser()
	}
	return fw.info.GetUser()
}

// runAs resolves the user the executor's container runs as: nil when
// --switch_user is off, when no user is set, or when the user is the
// agent's own (nothing to switch). An unknown user is an error naming it,
// as is a user the agent lacks the privilege to become.
func (a *Agent) runAs(fw *framework, info *mesos.ExecutorInfo) (*containerizer.User, error) {
	if !a.cfg.SwitchUser {
		return nil, nil
	}
	name := executorUser(fw, info)
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return nil, fmt.Errorf("user '%s' does not exist on agent %s (tasks run as their user: --switch_user)", name, a.cfg.Hostname)
		}
		return nil, fmt.Errorf("looking up user '%s': %v", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user '%s' has a non-numeric uid %q or gid %q", name, u.Uid, u.Gid)
	}
	if int(uid) == os.Getuid() {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("cannot run as user '%s': the agent is not root and may only run tasks as its own user (or start it with --switch_user=false)", name)
	}
	out := &containerizer.User{Name: name, UID: uint32(uid), GID: uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, g := range ids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				out.Groups = append(out.Groups, uint32(n))
			}
		}
	}
	return out, nil
}

// giveSandbox makes the container's sandbox and everything in it
// (fetched files included) belong to its user, as Mesos chowns an
// executor's directory to its user; so are its persistent volumes that
// are still empty (new ones), which the task could not write otherwise.
// Symlinks are changed themselves, never followed: a fetched archive's
// link may point anywhere.
func giveSandbox(cfg containerizer.ContainerConfig) error {
	u := cfg.User
	if u == nil {
		return nil
	}
	err := filepath.WalkDir(cfg.Dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(u.UID), int(u.GID))
	})
	if err != nil {
		return err
	}
	for _, v := range cfg.Volumes {
		if entries, err := os.ReadDir(v.HostPath); err == nil && len(entries) == 0 {
			if err := os.Lchown(v.HostPath, int(u.UID), int(u.GID)); err != nil {
				return err
			}
		}
	}
	return nil
}

// executorToken mints e's token (its framework, executor and container
// IDs), or "" when the agent has no --executor_secret_key.
func (a *Agent) executorToken(e *executor) (string, error) {
	if a.cfg.ExecutorSecretKey == nil {
		return "", nil
	}
	now := a.clock.Now()
	return exectoken.Mint(*a.cfg.ExecutorSecretKey,
		exectoken.Principal{FrameworkID: e.fw.id, ExecutorID: e.id, ContainerID: e.containerID},
		now, now.Add(executorTokenLifetime))
}

// authenticateExecutor checks an executor API call's bearer token against
// the executor the call names (httpapi calls it before the call reaches
// the loop): a missing, forged, expired or foreign token is a 401 in the
// executor realm, logged and counted.
func (a *Agent) authenticateExecutor(r *http.Request, call *executorpb.Call) error {
	refuse := func(why string) error {
		a.authFailures.Add(1)
		a.log.Warn("executor authentication failed", "framework", call.GetFrameworkId().GetValue(),
			"executor", call.GetExecutorId().GetValue(), "remote", r.RemoteAddr, "reason", why)
		return httpapi.Errorf(http.StatusUnauthorized, "Executor authentication failed: %s", why)
	}
	tok, err := exectoken.Bearer(r)
	if err != nil {
		return refuse(err.Error())
	}
	var cid string
	if qerr := a.query(func() {
		if fw := a.frameworks[call.GetFrameworkId().GetValue()]; fw != nil {
			if e := fw.executors[call.GetExecutorId().GetValue()]; e != nil {
				cid = e.containerID
			}
		}
	}); qerr != nil {
		return errStopping
	}
	if cid == "" {
		return refuse("no such executor on this agent")
	}
	want := exectoken.Principal{FrameworkID: call.GetFrameworkId().GetValue(), ExecutorID: call.GetExecutorId().GetValue(), ContainerID: cid}
	if err := exectoken.Verify(*a.cfg.ExecutorSecretKey, tok, want, a.clock.Now()); err != nil {
		return refuse(err.Error())
	}
	return nil
}
