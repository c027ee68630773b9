package main

import "os"

// pitfall reports whether CONFORM_GO_PITFALL names this pitfall. The conform tests set it to run
// the natural, wrong Go code that a fix replaced, and check that the suite catches it; it is never
// set in normal use.
func pitfall(name string) bool {
	return os.Getenv("CONFORM_GO_PITFALL") == name
}
