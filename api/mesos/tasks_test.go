package mesos

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

func TestIsTerminal(t *testing.T) {
	terminal := map[TaskState]bool{
		TaskState_TASK_FINISHED: true, TaskState_TASK_FAILED: true, TaskState_TASK_KILLED: true,
		TaskState_TASK_ERROR: true, TaskState_TASK_LOST: true, TaskState_TASK_DROPPED: true,
		TaskState_TASK_GONE: true, TaskState_TASK_GONE_BY_OPERATOR: true,
	}
	for v := range TaskState_name {
		s := TaskState(v)
		if got := IsTerminal(s); got != terminal[s] {
			t.Errorf("IsTerminal(%v) = %v", s, got)
		}
	}
}

func TestKillGracePeriod(t *testing.T) {
	kp := func(d time.Duration) *KillPolicy {
		return &KillPolicy{GracePeriod: &DurationInfo{Nanoseconds: proto.Int64(int64(d))}}
	}
	task := &TaskInfo{KillPolicy: kp(7 * time.Second)}
	tests := []struct {
		override *KillPolicy
		task     *TaskInfo
		want     time.Duration
	}{
		{nil, nil, DefaultKillGracePeriod},
		{nil, task, 7 * time.Second},
		{kp(time.Second), task, time.Second},
		{&KillPolicy{}, task, 7 * time.Second},
		{kp(-5), nil, 0},
	}
	for i, tt := range tests {
		if got := KillGracePeriod(tt.override, tt.task); got != tt.want {
			t.Errorf("case %d: %v, want %v", i, got, tt.want)
		}
	}
}
