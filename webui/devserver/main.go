// Command devserver serves the web UI against a running master until the
// master mounts it itself, and for editing the UI: it serves webui.Handler()
// (or, with --dir, the files on disk, so an edit shows on reload) and
// proxies every other path to the master.
//
//	go run ./webui/devserver --master=127.0.0.1:5050 --listen=127.0.0.1:8080 --dir=webui/ui
package main

import (
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"mezzo/webui"
)

func main() {
	master := flag.String("master", "127.0.0.1:5050", "the master to proxy API requests to")
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	dir := flag.String("dir", "", "serve the UI from this folder (webui/ui) instead of the embedded copy")
	flag.Parse()

	target, err := url.Parse("http://" + *master)
	if err != nil {
		log.Fatalf("devserver: --master=%q: %v", *master, err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	ui := webui.Handler()
	if *dir != "" {
		ui = http.FileServer(http.Dir(*dir))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" || r.URL.Path == "/index.html" || strings.HasPrefix(r.URL.Path, "/static/") {
			ui.ServeHTTP(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	})
	log.Printf("devserver: UI on http://%s, API from %s", *listen, target)
	log.Fatal(http.ListenAndServe(*listen, mux))
}
