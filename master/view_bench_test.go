package master

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/internal/authorizer"
)

// Filtering a snapshot of 1,000 frameworks × 10 tasks for one principal
// who may view a tenth of them: what --acls adds to a /master/state
// (docs/benchmarks.md).
func BenchmarkViewerFilter(b *testing.B) {
	s := &Snapshot{}
	for i := range 1000 {
		f := &FrameworkView{Info: &mesos.FrameworkInfo{Id: &mesos.FrameworkID{Value: proto.String(fmt.Sprint("F", i))},
			User: proto.String(fmt.Sprint("u", i%10))}}
		for j := range 10 {
			f.Tasks = append(f.Tasks, &mesos.Task{TaskId: &mesos.TaskID{Value: proto.String(fmt.Sprint("t", j))}, User: f.Info.User})
		}
		s.Frameworks = append(s.Frameworks, f)
	}
	acls, err := authorizer.ParseACLs([]byte(`{"permissive": false,
	  "view_frameworks": [{"principals": {"values": ["alice"]}, "users": {"values": ["u3"]}}],
	  "view_tasks": [{"principals": {"values": ["alice"]}, "users": {"values": ["u3"]}}]}`))
	if err != nil {
		b.Fatal(err)
	}
	v := Viewer{Authorizer: authorizer.NewLocal(acls), Subject: "alice"}
	b.ReportAllocs()
	for b.Loop() {
		if out := v.Filter(s); len(out.Frameworks) != 100 {
			b.Fatalf("%d frameworks visible", len(out.Frameworks))
		}
	}
}
