package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The default runtime directory is on a tmpfs, one per work directory, and
// the same for the same work directory (a restarted agent finds its
// records there).
func TestDefaultRuntimeDir(t *testing.T) {
	var st syscall.Statfs_t
	tmpfs := false
	for _, base := range []string{"/run", "/dev/shm"} {
		if syscall.Statfs(base, &st) == nil && st.Type == tmpfsMagic {
			tmpfs = true
		}
	}
	a, b := t.TempDir(), t.TempDir()
	da, db := defaultRuntimeDir(a), defaultRuntimeDir(b)
	t.Cleanup(func() {
		for _, d := range []string{da, db} {
			if d != "" {
				os.RemoveAll(d)
			}
		}
	})
	if !tmpfs {
		if da != "" {
			t.Fatalf("no tmpfs here, yet the runtime directory is %q", da)
		}
		return
	}
	if da == "" || db == "" || da == db {
		t.Fatalf("runtime directories %q and %q, want two distinct ones", da, db)
	}
	if again := defaultRuntimeDir(a); again != da {
		t.Errorf("the same work directory got %q, then %q", da, again)
	}
	if again := defaultRuntimeDir(filepath.Join(a, "x", "..")); again != da {
		t.Errorf("an equivalent path got %q, want %q", again, da)
	}
	if err := syscall.Statfs(da, &st); err != nil || st.Type != tmpfsMagic || !strings.Contains(da, "/mezzo/") {
		t.Errorf("%q is not a mezzo directory on a tmpfs (%v)", da, err)
	}
}

// `mezzo agent` takes the oversubscription flags with Mesos's names, and a
// bad value stops it at start with a message naming the flag.
func TestAgentOversubscriptionFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"--resource_estimator=guess"}, "--resource_estimator"},
		{[]string{"--qos_controller=load"}, "--load_qos_controller_threshold_5min"},
		{[]string{"--oversubscribed_resources_interval=soon"}, "oversubscribed_resources_interval"},
		{[]string{"--slack_estimator_margin=1.5", "--resource_estimator=slack"}, "--slack_estimator_margin"},
	} {
		var stderr strings.Builder
		code := runAgent(append([]string{"--master=127.0.0.1:1", "--work_dir=" + t.TempDir(), "--port=0",
			"--ip=127.0.0.1", "--runtime_dir=" + t.TempDir()}, tc.args...), io.Discard, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want a failure naming %s", tc.args, code, stderr.String(), tc.want)
		}
	}
	fs := newFlagSet("agent", io.Discard)
	f := addAgentFlags(fs, true)
	if code := parseFlags(fs, []string{"--resource_estimator=fixed", "--fixed_resource_estimator_resources=cpus:2",
		"--qos_controller=interference", "--oversubscribed_resources_interval=5secs", "--revocable_cpu_low_priority=false"}); code >= 0 {
		t.Fatalf("flags do not parse (exit %d)", code)
	}
	c := *f.ovs
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ResourceEstimator != "fixed" || c.QoSController != "interference" || c.OversubscribedResourcesInterval != 5*time.Second ||
		*c.RevocableCPULowPriority {
		t.Errorf("flags not carried: %+v", c)
	}
}
