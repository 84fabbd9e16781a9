module mezzo

go 1.26.8

require (
	github.com/google/uuid v1.6.0
	google.golang.org/protobuf v1.36.11
	pgregory.net/rapid v1.3.0
)
