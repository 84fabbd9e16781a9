// Package browsertest holds only tests: the web UI in real headless
// Chromium (Debian's chromium package), driven from Go with chromedp,
// against the real mezzo binary (`mezzo local`, one master or three).
//
// The suite checks what only a browser can: every page loads and renders
// without a console error or an uncaught exception; a task started after a
// page loaded appears on it without a reload; a task's stdout is followed
// while the task writes it; and a page opened on a follower master moves
// to the leader. Waits are on DOM conditions with deadlines, never sleeps.
//
// Chromium is found as $MEZZO_CHROMIUM, chromium, chromium-browser or
// google-chrome on $PATH. Without one the tests skip, saying so, unless
// $CI is set (not "false"): in CI a missing browser fails the suite
// (.ci/run installs it). `-short` skips the suite.
//
// `make screenshots` (go test -run TestScreenshots -screenshots=DIR)
// writes PNGs of the main pages, with the same code, for docs/webui.md.
package browsertest
