package docker

import (
	"time"

	"mezzo/internal/clock"
)

func clockFake() *clock.Fake { return clock.NewFake(time.Unix(1700000000, 0)) }
