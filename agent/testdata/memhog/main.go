// Command memhog allocates and touches memory until it has the number of
// megabytes given as its argument (default 200), then sleeps: the agent's
// end-to-end test runs it under a smaller memory limit to see the task
// fail with REASON_CONTAINER_LIMITATION_MEMORY.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	mb := 200
	if len(os.Args) > 1 {
		n, err := strconv.Atoi(os.Args[1])
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "memhog: %q is not a positive number of megabytes\n", os.Args[1])
			os.Exit(2)
		}
		mb = n
	}
	var chunks [][]byte
	for i := 0; i < mb; i++ {
		c := make([]byte, 1<<20)
		for j := range c {
			c[j] = byte(j) // touch every page so it is resident
		}
		chunks = append(chunks, c)
	}
	fmt.Printf("memhog: holding %d MB\n", len(chunks))
	time.Sleep(time.Hour)
}
