// Package flagenv gives every command-line flag a second source: the
// environment variable MESOS_<FLAG> (upper-cased), as Mesos does, so
// deployments written for Mesos keep working. A flag given on the command
// line wins over the environment.
package flagenv

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// Parse parses args into fs, first applying MESOS_<NAME> environment
// variables for flags not given on the command line. lookup is os.LookupEnv
// in production.
func Parse(fs *flag.FlagSet, args []string, lookup func(string) (string, bool)) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		v, ok := lookup("MESOS_" + strings.ToUpper(f.Name))
		if !ok {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("environment MESOS_%s: %v", strings.ToUpper(f.Name), e)
		}
	})
	return err
}

// Effective lists every flag of fs with its current value, for /flags.
func Effective(fs *flag.FlagSet) [][2]string {
	var out [][2]string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, [2]string{f.Name, f.Value.String()}) })
	return out
}

// OSLookup is os.LookupEnv.
var OSLookup = os.LookupEnv
