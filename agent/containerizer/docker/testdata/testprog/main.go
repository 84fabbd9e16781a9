// Command testprog is the program inside the docker containerizer's test
// image (FROM scratch): one static binary with a few behaviours chosen by
// its first argument, so one small image serves every test.
package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testprog serve|env|cat|echo|ignore-term|exit ...")
		os.Exit(64)
	}
	switch os.Args[1] {
	case "serve": // serve <addr> <reply>
		http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, os.Args[3])
		})
		fmt.Println("listening on", os.Args[2])
		if err := http.ListenAndServe(os.Args[2], nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "env": // env NAME...: prints NAME=value lines
		for _, n := range os.Args[2:] {
			fmt.Printf("%s=%s\n", n, os.Getenv(n))
		}
	case "cat": // cat FILE...
		for _, f := range os.Args[2:] {
			b, err := os.ReadFile(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Stdout.Write(b)
		}
	case "echo": // echo WORDS...: stdout, and "err: WORDS" on stderr
		fmt.Println(strings.Join(os.Args[2:], " "))
		fmt.Fprintln(os.Stderr, "err:", strings.Join(os.Args[2:], " "))
	case "write": // write FILE TEXT
		if err := os.WriteFile(os.Args[2], []byte(os.Args[3]), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "ignore-term": // ignores SIGTERM and runs until killed
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		for {
			time.Sleep(time.Hour)
		}
	case "sleep": // runs until signalled (SIGTERM ends it)
		fmt.Println("sleeping")
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		<-c
		fmt.Println("got SIGTERM")
		os.Exit(0)
	case "exit": // exit CODE
		var code int
		fmt.Sscan(os.Args[2], &code)
		os.Exit(code)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", os.Args[1])
		os.Exit(64)
	}
}
