package cli

import (
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
)

// volumesOpts are the flags of `volumes create|destroy|list`.
type volumesOpts struct {
	agent     *string
	role      *string
	id        *string
	size      *float64
	path      *string
	principal *string
}

var volumesSpec = spec{
	summary: "create, destroy, grow, shrink or list persistent volumes (operator CREATE_VOLUMES, DESTROY_VOLUMES, GROW_VOLUME, SHRINK_VOLUME, GET_STATE)",
	usage:   " create|destroy|grow|shrink|list",
	nargs:   1,
	setup: func(fs *flag.FlagSet) any {
		return &volumesOpts{
			agent:     fs.String("agent", "", "agent ID (required for create and destroy; filters list)"),
			role:      fs.String("role", "", "role whose reserved disk holds the volume (required for create; filters list)"),
			id:        fs.String("id", "", "persistence ID of the volume (required for create and destroy)"),
			size:      fs.Float64("size", 0, "size of the volume in MB (create); MB to add (grow) or to remove (shrink)"),
			path:      fs.String("path", "", "container path: where tasks see the volume, relative to their sandbox (create; default: the persistence ID)"),
			principal: fs.String("principal", "", "principal of the volume (create; default: the disk reservation's), or of the reserved disk to use"),
		}
	},
	run: runVolumes,
}

func runVolumes(e *env, c *invocation) error {
	o := c.opts.(*volumesOpts)
	switch c.args[0] {
	case "create":
		return c.createVolume(o)
	case "destroy":
		return c.destroyVolume(o)
	case "grow", "shrink":
		return c.resizeVolume(o, c.args[0] == "grow")
	case "list":
		return c.listVolumes(o)
	}
	return usageError{fmt.Errorf("unknown action %q: expecting create, destroy, grow, shrink or list", c.args[0])}
}

// createVolume builds the volume from the agent's reserved disk of the
// role (same reservation, principal and labels, as Mesos requires) and
// sends CREATE_VOLUMES.
func (c *invocation) createVolume(o *volumesOpts) error {
	switch {
	case *o.agent == "":
		return usageError{errors.New("--agent is required")}
	case *o.role == "":
		return usageError{errors.New("--role is required: volumes live on disk reserved for a role")}
	case *o.id == "":
		return usageError{errors.New("--id (the persistence ID) is required")}
	case *o.size <= 0:
		return usageError{errors.New("--size (MB) must be positive")}
	}
	a, err := c.findAgent(*o.agent)
	if err != nil {
		return err
	}
	held := a.reserved(*o.role)
	var disks []*mesos.Resource
	for _, h := range held {
		if h.GetName() != "disk" || h.GetDisk().GetPersistence() != nil || h.GetShared() != nil {
			continue
		}
		if *o.principal != "" && h.GetReservations()[len(h.GetReservations())-1].GetPrincipal() != *o.principal {
			continue
		}
		dup := false
		for _, d := range disks {
			dup = dup || sameReservations(d, h)
		}
		if !dup {
			disks = append(disks, h)
		}
	}
	switch {
	case len(disks) == 0:
		return fmt.Errorf("agent %s has no free disk reserved for role %s; reserve some first: mezzo reserve --agent=%s 'disk(%s):%s'",
			*o.agent, *o.role, *o.agent, *o.role, num(*o.size))
	case len(disks) > 1:
		return usageError{fmt.Errorf("agent %s holds disk reserved for role %s under %d different reservations; choose one with --principal",
			*o.agent, *o.role, len(disks))}
	}
	path := *o.path
	if path == "" {
		path = *o.id
	}
	principal := *o.principal
	if principal == "" {
		principal = disks[0].GetReservations()[len(disks[0].GetReservations())-1].GetPrincipal()
	}
	persistence := &mesos.Resource_DiskInfo_Persistence{Id: proto.String(*o.id)}
	if principal != "" {
		persistence.Principal = proto.String(principal)
	}
	vol := &mesos.Resource{
		Name:         proto.String("disk"),
		Type:         mesos.Value_SCALAR.Enum(),
		Scalar:       &mesos.Value_Scalar{Value: proto.Float64(*o.size)},
		Reservations: disks[0].GetReservations(),
		Disk: &mesos.Resource_DiskInfo{
			Persistence: persistence,
			Volume:      &mesos.Volume{ContainerPath: proto.String(path), Mode: mesos.Volume_RW.Enum()},
			Source:      disks[0].GetDisk().GetSource(),
		},
	}
	err = c.postOperation(&masterpb.Call{Type: masterpb.Call_CREATE_VOLUMES.Enum(),
		CreateVolumes: &masterpb.Call_CreateVolumes{AgentId: agentIDOf(*o.agent), Volumes: []*mesos.Resource{vol}}})
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, operationResult{AgentID: *o.agent, Operation: "CREATE", Resources: resourcesJSON([]*mesos.Resource{vol})})
	}
	_, err = fmt.Fprintf(c.stdout, "Created volume %s (%s, role %s) on agent %s; tasks see it at <sandbox>/%s.\n",
		*o.id, mem(*o.size), *o.role, *o.agent, path)
	return err
}

func sameReservations(a, b *mesos.Resource) bool {
	ra, rb := a.GetReservations(), b.GetReservations()
	if len(ra) != len(rb) {
		return false
	}
	for i := range ra {
		if !proto.Equal(ra[i], rb[i]) {
			return false
		}
	}
	return true
}

// findVolume finds a volume on the agent by persistence ID (and role, when
// given), as the agent holds it.
func (c *invocation) findVolume(o *volumesOpts) (*mesos.Resource, error) {
	if *o.agent == "" || *o.id == "" {
		return nil, usageError{errors.New("--agent and --id are required")}
	}
	a, err := c.findAgent(*o.agent)
	if err != nil {
		return nil, err
	}
	var found []*mesos.Resource
	for _, role := range a.roles() {
		if *o.role != "" && role != *o.role {
			continue
		}
		for _, h := range a.reserved(role) {
			if h.GetDisk().GetPersistence().GetId() == *o.id {
				found = append(found, h)
			}
		}
	}
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("agent %s has no persistent volume %q (see `mezzo volumes list --agent=%s`)", *o.agent, *o.id, *o.agent)
	case len(found) > 1:
		return nil, usageError{fmt.Errorf("agent %s has %d volumes with ID %q in different roles; choose one with --role", *o.agent, len(found), *o.id)}
	}
	return found[0], nil
}

// destroyVolume sends the volume back in DESTROY_VOLUMES exactly as the
// agent holds it.
func (c *invocation) destroyVolume(o *volumesOpts) error {
	vol, err := c.findVolume(o)
	if err != nil {
		return err
	}
	err = c.postOperation(&masterpb.Call{Type: masterpb.Call_DESTROY_VOLUMES.Enum(),
		DestroyVolumes: &masterpb.Call_DestroyVolumes{AgentId: agentIDOf(*o.agent), Volumes: []*mesos.Resource{vol}}})
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, operationResult{AgentID: *o.agent, Operation: "DESTROY", Resources: resourcesJSON([]*mesos.Resource{vol})})
	}
	_, err = fmt.Fprintf(c.stdout, "Destroyed volume %s (role %s) on agent %s; its disk stays reserved for the role.\n",
		*o.id, topRole(vol), *o.agent)
	return err
}

// resizeVolume grows a volume by --size MB of the agent's free disk under
// the volume's own reservation (GROW_VOLUME), or shrinks it by --size MB
// (SHRINK_VOLUME), which go back to that reservation.
func (c *invocation) resizeVolume(o *volumesOpts, grow bool) error {
	if *o.size <= 0 {
		return usageError{errors.New("--size (MB to add or remove) must be positive")}
	}
	vol, err := c.findVolume(o)
	if err != nil {
		return err
	}
	call := &masterpb.Call{Type: masterpb.Call_SHRINK_VOLUME.Enum(), ShrinkVolume: &masterpb.Call_ShrinkVolume{
		AgentId: agentIDOf(*o.agent), Volume: vol, Subtract: &mesos.Value_Scalar{Value: proto.Float64(*o.size)}}}
	op, verb, size := "SHRINK_VOLUME", "Shrank", vol.GetScalar().GetValue()-*o.size
	if grow {
		addition := &mesos.Resource{Name: proto.String("disk"), Type: mesos.Value_SCALAR.Enum(),
			Scalar: &mesos.Value_Scalar{Value: proto.Float64(*o.size)}, Reservations: vol.GetReservations()}
		if src := vol.GetDisk().GetSource(); src != nil {
			addition.Disk = &mesos.Resource_DiskInfo{Source: src}
		}
		call = &masterpb.Call{Type: masterpb.Call_GROW_VOLUME.Enum(), GrowVolume: &masterpb.Call_GrowVolume{
			AgentId: agentIDOf(*o.agent), Volume: vol, Addition: addition}}
		op, verb, size = "GROW_VOLUME", "Grew", vol.GetScalar().GetValue()+*o.size
	}
	if err := c.postOperation(call); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, operationResult{AgentID: *o.agent, Operation: op, Resources: resourcesJSON([]*mesos.Resource{vol})})
	}
	_, err = fmt.Fprintf(c.stdout, "%s volume %s (role %s) on agent %s to %s.\n", verb, *o.id, topRole(vol), *o.agent, mem(size))
	return err
}

// volumeRow is one line of `volumes list`, also its --json element.
type volumeRow struct {
	AgentID       string   `json:"agent_id"`
	Hostname      string   `json:"hostname"`
	Role          string   `json:"role"`
	ID            string   `json:"id"`
	Size          float64  `json:"size"`
	ContainerPath string   `json:"container_path"`
	Principal     string   `json:"principal,omitempty"`
	Shared        bool     `json:"shared,omitempty"`
	InUseBy       []string `json:"in_use_by"`
}

// listVolumes reads GET_STATE: the agents' totals hold the volumes, the
// live tasks' resources say which tasks use them.
func (c *invocation) listVolumes(o *volumesOpts) error {
	resp, err := c.operatorCall(&masterpb.Call{Type: masterpb.Call_GET_STATE.Enum()})
	if err != nil {
		return err
	}
	st := resp.GetGetState()
	users := map[[3]string][]string{} // agent, role, persistence ID → task IDs
	for _, t := range st.GetGetTasks().GetTasks() {
		if terminal(t.GetState().String()) {
			continue
		}
		for _, r := range t.GetResources() {
			if id := r.GetDisk().GetPersistence().GetId(); id != "" {
				k := [3]string{t.GetAgentId().GetValue(), topRole(r), id}
				users[k] = append(users[k], t.GetTaskId().GetValue())
			}
		}
	}
	rows := []volumeRow{}
	for _, a := range st.GetGetAgents().GetAgents() {
		aid := a.GetAgentInfo().GetId().GetValue()
		if *o.agent != "" && aid != *o.agent {
			continue
		}
		for _, r := range a.GetTotalResources() {
			p := r.GetDisk().GetPersistence()
			if p == nil || (*o.role != "" && topRole(r) != *o.role) {
				continue
			}
			k := [3]string{aid, topRole(r), p.GetId()}
			in := append([]string{}, users[k]...)
			sort.Strings(in)
			rows = append(rows, volumeRow{AgentID: aid, Hostname: a.GetAgentInfo().GetHostname(), Role: topRole(r),
				ID: p.GetId(), Size: r.GetScalar().GetValue(), ContainerPath: r.GetDisk().GetVolume().GetContainerPath(),
				Principal: p.GetPrincipal(), Shared: r.GetShared() != nil, InUseBy: in})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.AgentID != b.AgentID {
			return a.AgentID < b.AgentID
		}
		if a.Role != b.Role {
			return a.Role < b.Role
		}
		return a.ID < b.ID
	})
	if c.json {
		return writeJSON(c.stdout, rows)
	}
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		use := "-"
		if len(r.InUseBy) > 0 {
			use = strings.Join(r.InUseBy, ",")
		}
		principal := r.Principal
		if principal == "" {
			principal = "-"
		}
		lines = append(lines, []string{r.AgentID, r.Role, r.ID, mem(r.Size), r.ContainerPath, principal, use})
	}
	return table(c.stdout, []string{"AGENT", "ROLE", "ID", "SIZE", "PATH", "PRINCIPAL", "IN USE BY"}, lines)
}
