package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mezzo/internal/tlsconfig"
)

// tlsClient reaches a `mezzo local --tls` cluster with the files it made
// under <dir>/tls, loaded at each request (they appear once it started,
// and change when the test rotates them).
func tlsClient(dir string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		src, err := tlsconfig.Load(localTLSFiles(dir))
		if err != nil {
			return nil, err
		}
		return src.Transport().RoundTrip(r)
	})}
}

func localTLSFiles(dir string) tlsconfig.Files {
	d := filepath.Join(dir, "tls")
	return tlsconfig.Files{CA: filepath.Join(d, "ca.pem"), Cert: filepath.Join(d, "cert.pem"), Key: filepath.Join(d, "key.pem")}
}

// mezzoRun is `mezzo run` with the TLS flags for f, then args.
func mezzoRun(f tlsconfig.Files, args ...string) []string {
	return append([]string{"run", "--tls_ca_file=" + f.CA, "--tls_cert_file=" + f.Cert, "--tls_key_file=" + f.Key}, args...)
}

// Three masters and an agent over mutual TLS (`mezzo local --tls`): Raft,
// the agent protocol (h2), the scheduler API and the executors' calls all
// go over TLS; plaintext clients, clients trusting another CA and clients
// without a certificate are refused; after the certificates are rotated
// and SIGHUP sent, new connections use the new ones and the running task
// carries on.
func TestSecurityTLSCluster(t *testing.T) {
	c := startLocalVia(t, tlsClient, "https", 1, "--tls", "--masters=3", "--port="+strconv.Itoa(freeMasterPorts(t, 3)))
	files := localTLSFiles(c.dir)
	masters := "--master=" + c.addr

	code, out := runCmd(t, 60*time.Second, mezzoBin, mezzoRun(files, masters, "--checkpoint", "--stream=false", "--", "true")...)
	if code != 0 || !strings.Contains(out, "TASK_FINISHED") {
		t.Fatalf("mezzo run over TLS (command executor included): exit %d\n%s", code, out)
	}

	// Plaintext to the TLS port.
	resp, err := http.Get("http://" + c.addr + "/master/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plaintext GET: %d, want 400", resp.StatusCode)
	}
	code, out = runCmd(t, 30*time.Second, mezzoBin, "tasks", masters)
	if code == 0 || !strings.Contains(out, "Client sent an HTTP request to an HTTPS server") {
		t.Errorf("plaintext CLI: exit %d\n%s", code, out)
	}
	// An agent without TLS flags (h2c) is told what is wrong.
	plainAgent := startProc(t, "plaintext agent", "agent", "--master="+c.addr, "--work_dir="+t.TempDir(), "--port=0")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(plainAgent.logs(), tlsconfig.PlaintextMessage) {
		if time.Now().After(deadline) {
			t.Fatalf("a plaintext agent was not told the port speaks TLS:\n%s", plainAgent.logs())
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}
	plainAgent.kill()
	// A client trusting another CA, and one without a certificate.
	other, err := tlsconfig.Throwaway(t.TempDir(), []string{"127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	code, out = runCmd(t, 30*time.Second, mezzoBin, mezzoRun(other, masters, "--", "true")...)
	if code == 0 || !strings.Contains(out, "certificate signed by unknown authority") {
		t.Errorf("client trusting another CA: exit %d\n%s", code, out)
	}
	code, out = runCmd(t, 30*time.Second, mezzoBin, "run", masters, "--tls_ca_file="+files.CA, "--", "true")
	if code == 0 || !strings.Contains(out, "the server asks for a client certificate and none is configured") {
		t.Errorf("client without a certificate: exit %d\n%s", code, out)
	}

	// A long task, then new certificates from a new CA and SIGHUP.
	startProc(t, "long mezzo run", mezzoRun(files, masters, "--checkpoint", "--stream=false", "--task_id=long", "--", "sleep", "600")...)
	waitTaskState(t, c, "long", "TASK_RUNNING")
	oldCA := tlsconfig.Files{CA: filepath.Join(t.TempDir(), "old-ca.pem")}
	pem, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, oldCA.CA, string(pem), 0o644)
	if _, err := tlsconfig.Throwaway(filepath.Join(c.dir, "tls"), []string{"127.0.0.1", "localhost"}, time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(c.cmd.Process.Pid, syscall.SIGHUP)
	deadline = time.Now().Add(20 * time.Second)
	for !strings.Contains(c.logs(), "SIGHUP: TLS certificate and CA reloaded") {
		if time.Now().After(deadline) {
			t.Fatal("no reload logged after SIGHUP")
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}
	code, out = runCmd(t, 30*time.Second, mezzoBin, "tasks", masters, "--tls_ca_file="+oldCA.CA, "--tls_cert_file="+files.Cert, "--tls_key_file="+files.Key)
	if code == 0 {
		t.Errorf("a new connection trusting only the old CA succeeded after the rotation:\n%s", out)
	}
	waitTaskState(t, c, "long", "TASK_RUNNING") // through the new CA; the task carried on
	code, out = runCmd(t, 60*time.Second, mezzoBin, mezzoRun(files, masters, "--checkpoint", "--stream=false", "--", "true")...)
	if code != 0 {
		t.Errorf("mezzo run with the new certificates: exit %d\n%s", code, out)
	}
}

// freeMasterPorts returns a port p such that p … p+n-1 and their Raft
// ports (+1000) were free a moment ago: mezzo local --masters=n takes
// them all.
func freeMasterPorts(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		p := freeMasterPort(t)
		ok := true
		for i := range n {
			for _, q := range []int{p + i, p + i + 1000} {
				ln, err := listenTCP(q)
				if err != nil {
					ok = false
					break
				}
				ln.Close()
			}
		}
		if ok {
			return p
		}
	}
	t.Fatal("no free run of master ports")
	return 0
}

// waitTaskState polls the cluster's /master/tasks until task is in state.
func waitTaskState(t *testing.T, c *cluster, task, state string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var v struct{ Tasks []struct{ ID, State string } }
		err := getJSONWith(c.hc, c.url("/master/tasks?limit=-1"), &v)
		for _, tk := range v.Tasks {
			if tk.ID == task && tk.State == state {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s never %s (last: %+v, %v)", task, state, v.Tasks, err)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, bounded by the deadline
	}
}
