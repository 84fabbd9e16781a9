package cli

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
)

// teardownSpec is the one operator action: Mesos's operator API has no call
// that kills a single task (only the framework's scheduler can, over its
// own subscription), so the CLI offers TEARDOWN, which kills every task of
// the framework and removes it.
var teardownSpec = spec{
	summary: "tear a framework down: kill all its tasks and remove it (operator TEARDOWN)",
	usage:   " FRAMEWORK_ID",
	nargs:   1,
	run:     runTeardown,
}

func runTeardown(e *env, c *invocation) error {
	id := c.args[0]
	call := &masterpb.Call{
		Type:     masterpb.Call_TEARDOWN.Enum(),
		Teardown: &masterpb.Call_Teardown{FrameworkId: &mesos.FrameworkID{Value: proto.String(id)}},
	}
	body, err := codec.Marshal(codec.JSON, call)
	if err != nil {
		return fmt.Errorf("encoding the TEARDOWN call: %v", err)
	}
	if err := c.master.do("POST", "/api/v1", body, string(codec.JSON), nil); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, map[string]any{"framework_id": id, "torn_down": true})
	}
	_, err = fmt.Fprintf(c.stdout, "Framework %s torn down: its tasks are being killed.\n", id)
	return err
}
