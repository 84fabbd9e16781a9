package agentproxy

import (
	"encoding/json"
	"net/http"
	"path"
	"strings"

	"mezzo/api/mesos"
	"mezzo/internal/authn"
	"mezzo/internal/authorizer"
	"mezzo/internal/opapi"
	"mezzo/master"
)

// Who may read what through the proxy. A sandbox read is authorized as
// Mesos's agent authorizes it (access_sandboxes, by the user its executor
// runs as); a file outside every sandbox is a log (access_mesos_logs);
// the containers' statistics are an endpoint (get_endpoints
// "/monitor/statistics"). /state is the agent's to filter (it takes the
// same --acls). The agent checks again with what it knows.
//
// The sandbox is found from the path the agent will resolve: the first
// ".../frameworks/<F>/executors/<E>/runs/<run>" in it, which is the
// attachment the agent's longest-prefix lookup lands on for a clean path.
// Paths that are not clean ("..", ".", "//", relative) are refused here,
// so that what the master authorizes is what the agent reads; escapes
// through symlinks are the agent's (os.Root) to refuse.

// authorized answers 400 or 403 and returns false unless r's caller may
// read endpoint (with the query's path, for /files/*) on the agent.
func (p *proxy) authorized(w http.ResponseWriter, r *http.Request, snap *master.Snapshot, endpoint, filePath string) bool {
	if !strings.HasPrefix(endpoint, "/files/") {
		if endpoint == "/monitor/statistics" {
			return p.allow(w, r, authorizer.GetEndpoint, authorizer.Value("/monitor/statistics"))
		}
		return true
	}
	if !cleanPath(filePath) {
		opapi.WriteText(w, http.StatusBadRequest, "Invalid 'path' "+quote(filePath)+
			": expecting an absolute path without '.', '..' or empty components\n")
		return false
	}
	if p.authz == nil {
		return true
	}
	fid, eid, ok := sandboxOf(filePath)
	if !ok {
		return p.allow(w, r, authorizer.AccessMesosLog, authorizer.AnyObject)
	}
	obj, known := sandboxObject(snap, fid, eid)
	if !known {
		opapi.WriteText(w, http.StatusForbidden, "Forbidden: framework '"+fid+"' is not known to the master, so reading its sandboxes cannot be authorized here; read it on the agent\n")
		return false
	}
	return p.allow(w, r, authorizer.AccessSandbox, obj)
}

func (p *proxy) allow(w http.ResponseWriter, r *http.Request, action authorizer.Action, o authorizer.Object) bool {
	v := p.viewer(r)
	if v.May(action, o) {
		return true
	}
	opapi.WriteText(w, http.StatusForbidden, "Forbidden: "+v.Who()+" is not authorized to "+string(action)+" (object "+o.String()+")\n")
	return false
}

func (p *proxy) viewer(r *http.Request) master.Viewer {
	return master.Viewer{Authorizer: p.authz, Subject: authn.PrincipalOf(r.Context())}
}

// filterState removes from an agent's /state JSON the frameworks,
// executors and tasks the caller may not view, by the master's view of
// them (master.Viewer.Filter): what the master does not know of, or the
// caller may not see, is dropped. The agent answered as the master
// (which may see everything); this is the caller's share.
func (p *proxy) filterState(r *http.Request, snap *master.Snapshot, body []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	vis := p.viewer(r).Filter(snap)
	frameworks := map[string]bool{}
	executors := map[[2]string]bool{}
	tasks := map[[2]string]bool{}
	for _, group := range [][]*master.FrameworkView{vis.Frameworks, vis.CompletedFrameworks} {
		for _, f := range group {
			fid := f.Info.GetId().GetValue()
			frameworks[fid] = true
			for _, e := range f.Executors {
				executors[[2]string{fid, e.Info.GetExecutorId().GetValue()}] = true
			}
			for _, ts := range [][]*mesos.Task{f.Tasks, f.UnreachableTasks, f.CompletedTasks} {
				for _, t := range ts {
					tasks[[2]string{fid, t.GetTaskId().GetValue()}] = true
				}
			}
		}
	}
	keep := func(list any, ok func(id string) bool) []any {
		out := []any{}
		items, _ := list.([]any)
		for _, it := range items {
			if m, isObj := it.(map[string]any); isObj {
				if id, _ := m["id"].(string); ok(id) {
					out = append(out, m)
				}
			}
		}
		return out
	}
	for _, fk := range []string{"frameworks", "completed_frameworks"} {
		doc[fk] = keep(doc[fk], func(fid string) bool { return frameworks[fid] })
		for _, f := range doc[fk].([]any) {
			fm := f.(map[string]any)
			fid, _ := fm["id"].(string)
			taskOK := func(id string) bool { return tasks[[2]string{fid, id}] }
			for _, ek := range []string{"executors", "completed_executors"} {
				// A command task's executor is named after its task.
				fm[ek] = keep(fm[ek], func(eid string) bool { return executors[[2]string{fid, eid}] || taskOK(eid) })
				for _, e := range fm[ek].([]any) {
					em := e.(map[string]any)
					for _, tk := range []string{"tasks", "queued_tasks", "completed_tasks"} {
						em[tk] = keep(em[tk], taskOK)
					}
				}
			}
		}
	}
	return json.Marshal(doc)
}

// cleanPath reports whether p is absolute and has no ".", ".." or empty
// component (a trailing slash aside) and no NUL.
func cleanPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return false
	}
	t := strings.TrimRight(p, "/")
	if t == "" {
		return true
	}
	return path.Clean(t) == t
}

// sandboxOf finds the framework and executor of the first sandbox
// component sequence in p.
func sandboxOf(p string) (fid, eid string, ok bool) {
	seg := strings.Split(p, "/")
	for i := 0; i+5 < len(seg); i++ {
		if seg[i] == "frameworks" && seg[i+2] == "executors" && seg[i+4] == "runs" && seg[i+1] != "" && seg[i+3] != "" {
			return seg[i+1], seg[i+3], true
		}
	}
	return "", "", false
}

// sandboxObject is access_sandboxes' object for executor eid of framework
// fid: the executor's user, or, for a command task's executor (named
// after its task), the task's; else the framework's. known is false when
// the master has no record of the framework.
func sandboxObject(s *master.Snapshot, fid, eid string) (authorizer.Object, bool) {
	for _, group := range [][]*master.FrameworkView{s.Frameworks, s.CompletedFrameworks} {
		for _, f := range group {
			if f.Info.GetId().GetValue() != fid {
				continue
			}
			for _, e := range f.Executors {
				if e.Info.GetExecutorId().GetValue() == eid {
					return authorizer.AccessSandboxObject(e.Info, f.Info), true
				}
			}
			for _, ts := range [][]*mesos.Task{f.Tasks, f.UnreachableTasks, f.CompletedTasks} {
				for _, t := range ts {
					if t.GetTaskId().GetValue() == eid && t.User != nil {
						return authorizer.Value(t.GetUser()), true
					}
				}
			}
			return authorizer.AccessSandboxObject(&mesos.ExecutorInfo{}, f.Info), true
		}
	}
	return authorizer.Object{}, false
}

func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return "'" + s + "'"
}
