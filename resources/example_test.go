package resources_test

import (
	"fmt"

	"mezzo/resources"
)

func ExampleParse() {
	agent, err := resources.Parse("cpus:4;mem:1024;ports:[31000-32000];cpus(web):2", "*")
	if err != nil {
		panic(err)
	}
	task := resources.MustParse("cpus:0.1;mem:128;ports:[31000-31000]")
	fmt.Println(agent.Contains(task))
	fmt.Println(agent.Subtract(task))
	fmt.Println(agent.AllocatableTo("web/api").Scalar("cpus"))
	// Output:
	// true
	// cpus:3.9; cpus(web):2; mem:896; ports:[31001-32000]
	// 6
}
