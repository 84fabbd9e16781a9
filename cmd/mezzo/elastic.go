package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"mezzo/frameworks/elastic"
)

// runElastic is `mezzo elastic`: an elastic web service scaled with its
// load (frameworks/elastic; docs/frameworks.md), and its two helpers,
// `mezzo elastic replica` (what replicas run) and `mezzo elastic load`
// (a load generator).
func runElastic(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "replica":
			return runElasticReplica(args[1:], stderr)
		case "load":
			return runElasticLoad(args[1:], stdout, stderr)
		}
	}
	fs := newFlagSet("elastic", stderr)
	ff := addFrameworkFlags(fs, elastic.DefaultName)
	listen := fs.String("listen", "127.0.0.1:8080", "address of the load balancer in front of the replicas")
	command := fs.String("command", "", "the replicas' command, PORT set (default: this binary's 'elastic replica'; or give it after --)")
	res := fs.String("resources", elastic.DefaultTaskResources, "each replica's resources (ports is a count)")
	target := fs.Float64("target", elastic.DefaultTarget, "requests per second one replica takes")
	minR := fs.Int("min", 1, "fewest replicas")
	maxR := fs.Int("max", elastic.DefaultMax, "most replicas")
	interval := durationFlag(fs, "interval", elastic.DefaultInterval, "scaling tick")
	scaleDown := durationFlag(fs, "scale_down_after", elastic.DefaultScaleDownAfter, "fewer replicas must suffice this long before any is killed")
	revocable := fs.Bool("revocable", false, "let replicas beyond --min run on revocable resources (capability REVOCABLE_RESOURCES)")
	work := durationFlag(fs, "replica_work", 2*time.Millisecond, "CPU each request costs the default replica")
	load := fs.String("load", "", "also drive this load at the balancer, then stop: FROM-TO:DURATION or RATE:DURATION segments, e.g. 10-300:60s,300:30s,300-10:60s")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	var profile elastic.Profile
	if *load != "" {
		var err error
		if profile, err = elastic.ParseProfile(*load); err != nil {
			fmt.Fprintf(stderr, "mezzo elastic: --load: %v\n", err)
			return 2
		}
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "mezzo elastic: %v\n", err)
		return 1
	}
	cmd := commandOf(*command, fs.Args(), fmt.Sprintf("%s elastic replica --port=$PORT --work=%s", shellQuote(exe), *work))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo elastic: --listen: %v\n", err)
		return 2
	}
	var fw *elastic.Framework
	bal := elastic.NewBalancer(func() []string { return fw.Endpoints() }, elastic.NewMeter(nil, 5*time.Second))
	fw, err = elastic.New(elastic.Config{Config: ff.config(stderr), TaskResources: *res, Command: cmd,
		Target: *target, Min: *minR, Max: *maxR, Interval: *interval, ScaleDownAfter: *scaleDown, Revocable: *revocable,
		Load: func(time.Time) float64 { return bal.Load() }})
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "mezzo elastic: %v\n", err)
		return 2
	}
	srv := &http.Server{Handler: bal}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Fprintf(stderr, "mezzo elastic: balancer at http://%s\n", ln.Addr())

	// A signal or --timeout stops the service (a teardown ends its
	// replicas); Run itself gets a context only the outcome cancels.
	ctx, cancel := ff.context()
	defer cancel()
	type outcome struct {
		res *elastic.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := fw.Run(context.Background())
		done <- outcome{r, err}
	}()
	var lr *elastic.LoadResult
	if profile != nil {
		r, err := elastic.Generate(ctx, nil, "http://"+ln.Addr().String()+"/", profile, 0)
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(stderr, "mezzo elastic: load: %v\n", err)
		}
		lr = &r
	} else {
		<-ctx.Done()
	}
	fw.Stop()
	out := <-done
	if out.err != nil {
		fmt.Fprintf(stderr, "mezzo elastic: %v\n", out.err)
		return 1
	}
	summary := struct {
		*elastic.Result
		Load *elastic.LoadResult `json:"load,omitempty"`
	}{out.res, lr}
	return ff.report(stdout, summary, false, func() {
		peak := 0
		for i, s := range out.res.Samples {
			peak = max(peak, s.Running)
			if i%5 == 0 {
				fmt.Fprintf(stdout, "t=%5.0fs load %6.1f req/s  replicas %2d (wanted %2d, %d revocable)\n", s.Seconds, s.Load, s.Running, s.Desired, s.Revocable)
			}
		}
		fmt.Fprintf(stdout, "replicas: %d launched (%d on revocable resources), at most %d running, %d lost (%d revoked)\n",
			out.res.Launched, out.res.RevocableLaunched, peak, out.res.Lost, out.res.Revoked)
		if lr != nil {
			fmt.Fprintf(stdout, "load: %d sent, %d ok, %d failed, %d dropped; latency p50 %.1f ms, p99 %.1f ms\n",
				lr.Sent, lr.OK, lr.Failed, lr.Dropped, lr.P50MS, lr.P99MS)
		}
	})
}

// runElasticReplica is `mezzo elastic replica`: one replica's HTTP server.
func runElasticReplica(args []string, stderr io.Writer) int {
	fs := newFlagSet("elastic replica", stderr)
	port := fs.Int("port", 0, "port to serve on (the task's PORT)")
	ip := fs.String("ip", "0.0.0.0", "address to serve on")
	work := durationFlag(fs, "work", 2*time.Millisecond, "CPU each request costs")
	name := fs.String("name", "", "what requests are answered with (default: hostname:port)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if *port <= 0 || *port > 65535 {
		fmt.Fprintf(stderr, "mezzo elastic replica: --port must be 1-65535, got %d\n", *port)
		return 2
	}
	if *name == "" {
		h, _ := os.Hostname()
		*name = fmt.Sprintf("%s:%d", h, *port)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*ip, fmt.Sprint(*port)))
	if err != nil {
		fmt.Fprintf(stderr, "mezzo elastic replica: %v\n", err)
		return 1
	}
	ctx, cancel := signalContext()
	defer cancel()
	srv := &http.Server{Handler: elastic.ReplicaHandler(*name, *work)}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Fprintf(stderr, "replica %s serving on %s\n", *name, ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "mezzo elastic replica: %v\n", err)
		return 1
	}
	return 0
}

// runElasticLoad is `mezzo elastic load`: the load generator alone.
func runElasticLoad(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("elastic load", stderr)
	url := fs.String("url", "http://127.0.0.1:8080/", "what to load")
	profile := fs.String("profile", "", "FROM-TO:DURATION or RATE:DURATION segments, e.g. 10-300:60s,300:30s")
	inFlight := fs.Int("max_in_flight", 512, "most requests outstanding; more are dropped (counted)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	p, err := elastic.ParseProfile(*profile)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo elastic load: --profile: %v\n", err)
		return 2
	}
	ctx, cancel := signalContext()
	defer cancel()
	r, err := elastic.Generate(ctx, nil, *url, p, *inFlight)
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "mezzo elastic load: %v\n", err)
		return 1
	}
	ff := frameworkFlags{asJSON: *asJSON}
	return ff.report(stdout, r, r.Failed > 0, func() {
		fmt.Fprintf(stdout, "%d sent, %d ok, %d failed, %d dropped; latency p50 %.1f ms, p99 %.1f ms\n",
			r.Sent, r.OK, r.Failed, r.Dropped, r.P50MS, r.P99MS)
	})
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`;&|<>()*?[]#~!{}") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
