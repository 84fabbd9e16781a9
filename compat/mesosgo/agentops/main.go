// Command agentops is a Mesos agent operator-API client written against
// mesos-go v0.0.11's unmodified agent library (calls, httpagent, codecs).
// The end-to-end tests run it against a mezzo agent, so that a real Mesos
// client's encoders and decoders (gogo protobuf and its JSON) check the
// agent's answers, in both media types.
//
// Usage: agentops -agent=http://host:port/api/v1 -codec=json|protobuf
// -sandbox=DIR. It makes every read call, lists DIR and reads DIR/stdout,
// sets and reads the logging level, prints one line per call and exits 1
// on the first error.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/mesos/mesos-go/api/v1/lib/agent"
	"github.com/mesos/mesos-go/api/v1/lib/agent/calls"
	"github.com/mesos/mesos-go/api/v1/lib/encoding/codecs"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/httpagent"
)

func main() {
	endpoint := flag.String("agent", "http://127.0.0.1:5051/api/v1", "the agent's operator API")
	codec := flag.String("codec", "protobuf", "json or protobuf")
	sandbox := flag.String("sandbox", "", "a sandbox directory to list and read stdout from")
	flag.Parse()
	mt := codecs.MediaTypeProtobuf
	if *codec == "json" {
		mt = codecs.MediaTypeJSON
	}
	cli := httpcli.New(httpcli.Endpoint(*endpoint), httpcli.Codec(codecs.ByMediaType[mt]))
	sender := httpagent.NewSender(cli.Send)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	do := func(name string, c *agent.Call) *agent.Response {
		resp, err := sender.Send(ctx, calls.NonStreaming(c))
		if err != nil {
			fail("%s: %v", name, err)
		}
		defer resp.Close()
		var r agent.Response
		if err := resp.Decode(&r); err != nil {
			fail("%s: decoding: %v", name, err)
		}
		return &r
	}

	st := do("GET_STATE", calls.GetState()).GetGetState()
	fmt.Printf("GET_STATE frameworks=%d completed_frameworks=%d launched=%d terminated=%d completed=%d\n",
		len(st.GetGetFrameworks().GetFrameworks()), len(st.GetGetFrameworks().GetCompletedFrameworks()),
		len(st.GetGetTasks().GetLaunchedTasks()), len(st.GetGetTasks().GetTerminatedTasks()), len(st.GetGetTasks().GetCompletedTasks()))
	ag := do("GET_AGENT", calls.GetAgent()).GetGetAgent()
	fmt.Printf("GET_AGENT id=%s hostname=%s\n", ag.GetAgentInfo().GetID().GetValue(), ag.GetAgentInfo().GetHostname())
	fmt.Printf("GET_FLAGS flags=%d\n", len(do("GET_FLAGS", calls.GetFlags()).GetGetFlags().GetFlags()))
	fmt.Printf("GET_VERSION version=%s\n", do("GET_VERSION", calls.GetVersion()).GetGetVersion().VersionInfo.Version)
	timeout := 5 * time.Second
	fmt.Printf("GET_METRICS metrics=%d\n", len(do("GET_METRICS", calls.GetMetrics(&timeout)).GetGetMetrics().GetMetrics()))
	fmt.Printf("GET_FRAMEWORKS completed=%d\n", len(do("GET_FRAMEWORKS", calls.GetFrameworks()).GetGetFrameworks().GetCompletedFrameworks()))
	ex := do("GET_EXECUTORS", calls.GetExecutors()).GetGetExecutors()
	fmt.Printf("GET_EXECUTORS executors=%d completed=%d\n", len(ex.GetExecutors()), len(ex.GetCompletedExecutors()))
	tk := do("GET_TASKS", calls.GetTasks()).GetGetTasks()
	for _, t := range append(tk.GetTerminatedTasks(), tk.GetCompletedTasks()...) {
		fmt.Printf("GET_TASKS task=%s state=%s\n", t.TaskID.Value, t.GetState())
	}
	fmt.Printf("GET_CONTAINERS containers=%d\n", len(do("GET_CONTAINERS", calls.GetContainers()).GetGetContainers().GetContainers()))
	if *sandbox != "" {
		for _, fi := range do("LIST_FILES", calls.ListFiles(*sandbox)).GetListFiles().GetFileInfos() {
			fmt.Printf("LIST_FILES path=%s size=%d\n", fi.GetPath(), fi.Size)
		}
		rf := do("READ_FILE", calls.ReadFile(*sandbox+"/stdout", 0)).GetReadFile()
		fmt.Printf("READ_FILE size=%d data=%q\n", rf.Size, rf.GetData())
	}
	if err := calls.SendNoData(ctx, sender, calls.NonStreaming(calls.SetLoggingLevel(1, time.Minute))); err != nil {
		fail("SET_LOGGING_LEVEL: %v", err)
	}
	fmt.Printf("GET_LOGGING_LEVEL level=%d\n", do("GET_LOGGING_LEVEL", calls.GetLoggingLevel()).GetGetLoggingLevel().GetLevel())
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "agentops: "+format+"\n", args...)
	os.Exit(1)
}
