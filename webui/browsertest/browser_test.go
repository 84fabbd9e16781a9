package browsertest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var screenshots = flag.String("screenshots", "", "write screenshots of the main pages to this folder (TestScreenshots)")

// The browser and the binary are shared by the package's tests and made on
// first use, so a run that skips starts neither.
var (
	setupOnce   sync.Once
	setupErr    error
	chromePath  string
	mezzoBin    string
	repoRoot    string
	browserCtx  context.Context
	stopBrowser = func() {}
	tmpDir      string
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	stopBrowser()
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
	os.Exit(code)
}

// inCI reports whether the suite runs in CI, where it must not skip.
func inCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// findChromium returns the browser to drive, or "".
func findChromium() string {
	if p := os.Getenv("MEZZO_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// need starts (once) what every test needs: Chromium and the mezzo binary.
// Without Chromium it skips the test, or fails it in CI.
func need(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("browsertest: skipped in -short mode (runs real Chromium and mezzo processes)")
	}
	setupOnce.Do(setup)
	if chromePath == "" {
		msg := "browsertest: no Chromium found ($MEZZO_CHROMIUM, chromium, chromium-browser or google-chrome); install Debian's chromium (apt-get install -y chromium)"
		if inCI() {
			t.Fatal(msg + " — CI is set, so the browser suite may not skip")
		}
		t.Skip(msg)
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

func setup() {
	chromePath = findChromium()
	if chromePath == "" {
		return
	}
	wd, _ := os.Getwd()
	repoRoot = filepath.Dir(filepath.Dir(wd)) // webui/browsertest -> repo
	dir, err := os.MkdirTemp("", "mezzo-browsertest-")
	if err != nil {
		setupErr = err
		return
	}
	tmpDir = dir
	mezzoBin = filepath.Join(dir, "mezzo")
	cmd := exec.Command("go", "build", "-o", mezzoBin, "./cmd/mezzo")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		setupErr = fmt.Errorf("building mezzo: %v\n%s", err, out)
		return
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromePath),
		chromedp.NoSandbox, // root in a container; the pages are our own
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Flag("disable-gpu", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	// The first Run starts the browser; it must not carry a deadline.
	if err := chromedp.Do(ctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		setupErr = fmt.Errorf("starting %s: %v", chromePath, err)
		return
	}
	browserCtx = ctx
	stopBrowser = func() { cancelBrowser(); cancelAlloc() }
}

// tab is one browser tab whose console errors and uncaught exceptions are
// recorded from its first moment.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu     sync.Mutex
	errors []string
}

// newTab opens a tab; the test fails at its end if the tab logged an error.
func newTab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx)
	tb := &tab{t: t, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		cancel()
		t.Fatalf("opening a tab: %v", err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				where := m.URL
				if m.Source != "" {
					where = m.Source + " " + where
				}
				tb.mu.Lock()
				tb.errors = append(tb.errors, fmt.Sprintf("%s (%s)", m.String(), strings.TrimSpace(where)))
				tb.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		tb.checkConsole("at the end of the test")
		cancel()
	})
	return tb
}

// checkConsole fails the test if the tab logged an error so far.
func (tb *tab) checkConsole(when string) {
	tb.t.Helper()
	tb.mu.Lock()
	errs := append([]string(nil), tb.errors...)
	tb.errors = nil
	tb.mu.Unlock()
	for _, e := range errs {
		tb.t.Errorf("console %s: %s", when, e)
	}
}

// timeout bounds every wait on the page: generous, since the machine may be
// loaded, and never spent unless the condition fails to come true.
const timeout = 60 * time.Second

// open navigates the tab to url and waits for the page to load.
func (tb *tab) open(url string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		tb.t.Fatalf("opening %s: %v", url, err)
	}
}

// wait polls a JavaScript condition in the page until it is truthy.
func (tb *tab) wait(what, expr string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, timeout)
	defer cancel()
	var err error
	for tries := 0; tries < 100; tries++ {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool]("!!("+expr+")",
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
		// A navigation (a redirect, a reload) ends the poll in the old
		// document; poll again in the new one until the deadline.
		if err == nil || ctx.Err() != nil || errors.Is(err, chromedp.ErrPollingTimeout) {
			break
		}
	}
	if err != nil {
		tb.t.Fatalf("waiting for %s (%s): %v\npage at %s shows:\n%s", what, expr, err, tb.location(), tb.text())
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// text is the page's visible text (for failure messages).
func (tb *tab) text() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	if len(s) > 3000 {
		s = s[:3000] + "…"
	}
	return s
}

func (tb *tab) location() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Location())
	return s
}

// go navigates within the page (hash routes) without reloading it.
func (tb *tab) goTo(hash string) {
	tb.t.Helper()
	eval[bool](tb, fmt.Sprintf(`(location.hash = %q, true)`, hash))
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return fmt.Sprintf("%q", s)
}
