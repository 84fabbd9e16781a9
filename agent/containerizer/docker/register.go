package docker

import "mezzo/agent/containerizer"

func init() {
	containerizer.Register("docker", func(opts containerizer.Options) (containerizer.Containerizer, error) {
		return New(Config{Options: opts})
	})
}
