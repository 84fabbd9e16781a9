package oversub

import (
	"context"
	"sort"
	"sync"
	"time"
)

// QoSController protects regular containers from revocable ones.
//
// Ownership and threading: one goroutine of the agent (not its event loop)
// owns a controller and calls Corrections, carries them out, waits at least
// Config.QoSCorrectionIntervalMin and calls again; calls never overlap. The
// controller pulls usage from its UsageSource, may keep history between
// calls, never sleeps and never reads the clock.
type QoSController interface {
	// Corrections returns what the agent must do now; nil means nothing.
	// Only revocable containers are ever named. An error means "no
	// decision this round", not "kill nothing forever".
	Corrections(ctx context.Context, now time.Time) ([]Correction, error)
}

// CorrectionType is what a Correction asks for. Mesos defines only KILL.
type CorrectionType int

// Kill terminates the whole container (executor and all its tasks).
const Kill CorrectionType = 1

// Correction is Mesos's QoSCorrection: kill one revocable container. The
// agent reports the tasks it kills as TASK_LOST (TASK_GONE for
// partition-aware frameworks) with REASON_EXECUTOR_PREEMPTED and Message.
type Correction struct {
	Type        CorrectionType
	FrameworkID string
	ExecutorID  string
	ContainerID string
	// Controller is the registered name of the controller that asked.
	Controller string
	// Message says why, naming the controller, for the task status.
	Message string
}

// ControllerFactory builds a controller from a validated Config.
type ControllerFactory func(cfg Config, usage UsageSource) (QoSController, error)

var (
	controllerMu sync.Mutex
	controllers  = map[string]ControllerFactory{}
	// controllerAliases maps Mesos's module names to ours.
	controllerAliases = map[string]string{"org_apache_mesos_LoadQoSController": "load"}
)

// RegisterController makes a controller available under name (for
// --qos_controller). It panics on a duplicate: registration happens in init
// functions.
func RegisterController(name string, f ControllerFactory) {
	controllerMu.Lock()
	defer controllerMu.Unlock()
	if _, dup := controllers[name]; dup {
		panic("oversub: duplicate QoS controller " + name)
	}
	controllers[name] = f
}

func canonicalController(name string) string {
	if n, ok := controllerAliases[name]; ok {
		return n
	}
	return name
}

func lookupController(name string) (ControllerFactory, bool) {
	controllerMu.Lock()
	defer controllerMu.Unlock()
	f, ok := controllers[canonicalController(name)]
	return f, ok
}

// ControllerNames lists the registered controllers, sorted.
func ControllerNames() []string {
	controllerMu.Lock()
	defer controllerMu.Unlock()
	names := make([]string, 0, len(controllers))
	for n := range controllers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewController validates cfg and builds the controller it names.
func NewController(cfg Config, usage UsageSource) (QoSController, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f, _ := lookupController(cfg.QoSController)
	return f(cfg, usage)
}

func init() {
	RegisterController("noop", func(Config, UsageSource) (QoSController, error) { return noopController{}, nil })
	RegisterController("load", newLoad)
	RegisterController("interference", newInterference)
}

var (
	_ QoSController = noopController{}
	_ QoSController = (*loadController)(nil)
	_ QoSController = (*interferenceController)(nil)
)

// noopController never corrects anything.
type noopController struct{}

func (noopController) Corrections(context.Context, time.Time) ([]Correction, error) { return nil, nil }

// kill is the correction killing c on behalf of controller.
func kill(c ContainerUsage, controller, message string) Correction {
	return Correction{Type: Kill, FrameworkID: c.FrameworkID, ExecutorID: c.ExecutorID,
		ContainerID: c.ContainerID, Controller: controller, Message: message}
}
