package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
)

// maintenanceSpec is `mezzo maintenance schedule|status|down|up`: the
// maintenance schedule (Mesos's /master/maintenance/schedule), the
// machines' modes with the frameworks' answers to inverse offers
// (/master/maintenance/status), and machine down/up (/master/machine/down
// and /master/machine/up). Machines are written HOST, IP or HOST/IP.
var maintenanceSpec = spec{
	summary: "maintenance: show or set the schedule (schedule [FILE]), show machine modes (status), bring machines down or up (down|up MACHINE...)",
	usage:   " schedule [FILE|-] | status | down MACHINE... | up MACHINE...",
	nargs:   1,
	maxargs: 1 << 16,
	run:     runMaintenance,
}

func runMaintenance(e *env, c *invocation) error {
	if len(c.args) == 0 {
		return usageError{fmt.Errorf("expecting a subcommand: schedule, status, down or up")}
	}
	sub, args := c.args[0], c.args[1:]
	switch sub {
	case "schedule":
		switch len(args) {
		case 0:
			return showSchedule(c)
		case 1:
			return setSchedule(c, args[0])
		}
		return usageError{fmt.Errorf("schedule takes at most one argument (a JSON Schedule file, or - for stdin)")}
	case "status":
		if len(args) != 0 {
			return usageError{fmt.Errorf("status takes no argument")}
		}
		return showMaintenanceStatus(c)
	case "down", "up":
		if len(args) == 0 {
			return usageError{fmt.Errorf("%s: expecting at least one MACHINE (HOST, IP or HOST/IP)", sub)}
		}
		return machinesDownUp(c, sub, args)
	}
	return usageError{fmt.Errorf("unknown subcommand %q (schedule, status, down or up)", sub)}
}

// parseMachine reads HOST, IP or HOST/IP.
func parseMachine(s string) (*mesos.MachineID, error) {
	host, ip, hasIP := strings.Cut(s, "/")
	m := &mesos.MachineID{}
	switch {
	case hasIP:
		if host != "" {
			m.Hostname = proto.String(host)
		}
		m.Ip = proto.String(ip)
	default:
		if _, err := netip.ParseAddr(s); err == nil {
			m.Ip = proto.String(s)
		} else {
			m.Hostname = proto.String(s)
		}
	}
	if m.GetHostname() == "" && m.GetIp() == "" {
		return nil, fmt.Errorf("machine %q: expecting HOST, IP or HOST/IP", s)
	}
	return m, nil
}

func machineText(m *mesos.MachineID) string {
	switch {
	case m.GetHostname() != "" && m.GetIp() != "":
		return m.GetHostname() + "/" + m.GetIp()
	case m.GetHostname() != "":
		return m.GetHostname()
	}
	return m.GetIp()
}

// getProto GETs path and decodes its JSON body into m.
func (c *invocation) getProto(path string, m proto.Message) error {
	var raw json.RawMessage
	if err := c.master.getJSON(path, &raw); err != nil {
		return err
	}
	if err := codec.Unmarshal(codec.JSON, raw, m); err != nil {
		return fmt.Errorf("decoding %s: %v", path, err)
	}
	return nil
}

// windowRow is one machine of `maintenance schedule`, also its --json element.
type windowRow struct {
	Window   int       `json:"window"`
	Machine  string    `json:"machine"`
	Start    time.Time `json:"start"`
	Duration string    `json:"duration"`
}

func showSchedule(c *invocation) error {
	s := &maintenancepb.Schedule{}
	if err := c.getProto("/master/maintenance/schedule", s); err != nil {
		return err
	}
	if c.json {
		b, err := codec.Marshal(codec.JSON, s)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.stdout, "%s\n", b)
		return err
	}
	var rows [][]string
	for i, w := range s.GetWindows() {
		u := w.GetUnavailability()
		start := time.Unix(0, u.GetStart().GetNanoseconds()).UTC().Format(time.RFC3339)
		dur := "-"
		if u.Duration != nil {
			dur = time.Duration(u.GetDuration().GetNanoseconds()).String()
		}
		for _, m := range w.GetMachineIds() {
			rows = append(rows, []string{fmt.Sprint(i), machineText(m), start, dur})
		}
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(c.stdout, "No maintenance scheduled.")
		return err
	}
	return table(c.stdout, []string{"WINDOW", "MACHINE", "START", "DURATION"}, rows)
}

func setSchedule(c *invocation, file string) error {
	var body []byte
	var err error
	if file == "-" {
		body, err = io.ReadAll(os.Stdin)
	} else {
		body, err = os.ReadFile(file)
	}
	if err != nil {
		return fmt.Errorf("reading the schedule: %v", err)
	}
	s := &maintenancepb.Schedule{}
	if err := codec.Unmarshal(codec.JSON, body, s); err != nil {
		return usageError{fmt.Errorf("%s is not a JSON maintenance Schedule: %v", file, err)}
	}
	b, err := codec.Marshal(codec.JSON, s)
	if err != nil {
		return err
	}
	if err := c.master.do("POST", "/master/maintenance/schedule", b, string(codec.JSON), nil); err != nil {
		return err
	}
	n := 0
	for _, w := range s.GetWindows() {
		n += len(w.GetMachineIds())
	}
	if c.json {
		return writeJSON(c.stdout, map[string]any{"windows": len(s.GetWindows()), "machines": n})
	}
	_, err = fmt.Fprintf(c.stdout, "Maintenance schedule updated: %d window(s), %d machine(s).\n", len(s.GetWindows()), n)
	return err
}

// machineStatus is one machine of `maintenance status`, also its --json
// element.
type machineStatus struct {
	Machine string            `json:"machine"`
	Mode    string            `json:"mode"`
	Answers map[string]string `json:"inverse_offers"` // framework ID → ACCEPT/DECLINE
}

func showMaintenanceStatus(c *invocation) error {
	st := &maintenancepb.ClusterStatus{}
	if err := c.getProto("/master/maintenance/status", st); err != nil {
		return err
	}
	var out []machineStatus
	for _, d := range st.GetDrainingMachines() {
		ms := machineStatus{Machine: machineText(d.GetId()), Mode: "DRAINING", Answers: map[string]string{}}
		for _, s := range d.GetStatuses() {
			ms.Answers[s.GetFrameworkId().GetValue()] = s.GetStatus().String()
		}
		out = append(out, ms)
	}
	for _, m := range st.GetDownMachines() {
		out = append(out, machineStatus{Machine: machineText(m), Mode: "DOWN", Answers: map[string]string{}})
	}
	if c.json {
		if out == nil {
			out = []machineStatus{}
		}
		return writeJSON(c.stdout, out)
	}
	if len(out) == 0 {
		_, err := fmt.Fprintln(c.stdout, "No machine is in maintenance.")
		return err
	}
	var rows [][]string
	for _, m := range out {
		var answers []string
		for _, fw := range sortedStrings(m.Answers) {
			answers = append(answers, fw+"="+m.Answers[fw])
		}
		a := strings.Join(answers, ",")
		if a == "" {
			a = "-"
		}
		rows = append(rows, []string{m.Machine, m.Mode, a})
	}
	return table(c.stdout, []string{"MACHINE", "MODE", "INVERSE OFFERS"}, rows)
}

func sortedStrings(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

func machinesDownUp(c *invocation, verb string, args []string) error {
	var parts []string
	var names []string
	for _, a := range args {
		m, err := parseMachine(a)
		if err != nil {
			return usageError{err}
		}
		b, err := codec.Marshal(codec.JSON, m)
		if err != nil {
			return err
		}
		parts = append(parts, string(b))
		names = append(names, machineText(m))
	}
	body := []byte("[" + strings.Join(parts, ",") + "]")
	if err := c.master.do("POST", "/master/machine/"+verb, body, string(codec.JSON), nil); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, map[string]any{"machines": names, "mode": map[string]string{"down": "DOWN", "up": "UP"}[verb]})
	}
	msg := "Machines DOWN: their agents are shut down and may not register until they are UP"
	if verb == "up" {
		msg = "Machines UP: they left the schedule and their agents may register again"
	}
	_, err := fmt.Fprintf(c.stdout, "%s (%s).\n", msg, strings.Join(names, ", "))
	return err
}
