package paper

// FailoverPoint is one cluster size of the §6.6 plot: `mezzo bench
// failover` (three masters, the leader SIGKILLed) with that many agents.
type FailoverPoint struct {
	Agents     int `json:"agents"`
	Frameworks int `json:"frameworks"`
	// MTTRMS is from the kill until every agent and framework is back with
	// the new leader (the paper's MTTR); ElectionMS until a new leader
	// served; AgentsMS and FrameworksMS split MTTR.
	MTTRMS       float64 `json:"mttr_ms"`
	ElectionMS   float64 `json:"election_ms"`
	AgentsMS     float64 `json:"agents_ms"`
	FrameworksMS float64 `json:"frameworks_ms"`
	// ReregisterAttempts counts the agents' SUBSCRIBEs after the kill:
	// one per agent when none had to try again (a new leader that lost
	// its leadership during the storm sends them all back).
	ReregisterAttempts int64 `json:"reregister_attempts"`
}

// FailoverResult is the §6.6 plot, ours.
type FailoverResult struct {
	Machine Machine         `json:"machine"`
	Points  []FailoverPoint `json:"points"`
}

// PaperMTTR bounds the paper's measured MTTR (§6.6: "between 4 and 8
// seconds", 200 to 4,000 agents, two masters and a 5-node ZooKeeper).
var PaperMTTR = [2]float64{4, 8}

// NewFailoverResult starts a result with this machine's description.
func NewFailoverResult() *FailoverResult { return &FailoverResult{Machine: machine()} }
