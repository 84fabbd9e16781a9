module mezzo/compat/mesosgo

go 1.26.0

require github.com/mesos/mesos-go v0.0.11

require (
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/pborman/uuid v1.2.1 // indirect
	github.com/pquerna/ffjson v0.0.0-20190930134022-aa0246cd15f7 // indirect
	github.com/prometheus/client_golang v0.9.4 // indirect
)
