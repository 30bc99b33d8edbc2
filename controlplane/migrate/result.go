// result.go: how a migration reads to an operator (`streamseal migrate`).

package migrate

import "fmt"

// String says what a Migrate call did, as `streamseal migrate` prints it.
func (r Result) String() string {
	return fmt.Sprintf("migrated: schema version %d -> %d; functions re-installed", r.From, r.To)
}
