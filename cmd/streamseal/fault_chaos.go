//go:build chaos

// fault_chaos.go: run's fault-injection flags, compiled only into a build tagged chaos, which the
// fault suite (internal/chaos, `make chaos`) runs as real processes. The product build has none
// of this: run refuses the flags as unknown (cli_test.go proves it).

package main

import (
	"flag"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"

	"github.com/google/uuid"

	"github.com/streamseal/streamseal/controlplane/inbox"
	"github.com/streamseal/streamseal/controlplane/store"
)

func init() {
	runFaults = func(fs *flag.FlagSet) func() inbox.Suppress {
		var share float64
		fs.Func("fault-drop-first-delivery",
			"FAULT INJECTION (chaos build only): acknowledge and drop the first delivery this process sees of this share (0..1) of events, chosen by event id",
			func(v string) error {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || f < 0 || f > 1 {
					return fmt.Errorf("expected a share 0..1")
				}
				share = f
				return nil
			})
		return func() inbox.Suppress {
			if share <= 0 {
				return nil
			}
			return dropFirstDelivery(share)
		}
	}
}

// dropFirstDelivery returns a Suppress that drops the first delivery this process sees of each
// event whose id falls in share (a fixed choice by id, so the same events are chosen whatever
// their order); a second delivery of it (a JetStream redelivery, a duplicate) is stored. Repairs
// do not pass the inbox, so they are never dropped: this is the loss of a receive-boundary defect.
func dropFirstDelivery(share float64) inbox.Suppress {
	var mu sync.Mutex
	seen := map[uuid.UUID]bool{}
	limit := uint64(share * float64(^uint64(0)))
	if share >= 1 {
		limit = ^uint64(0)
	}
	return func(e store.EventCopy) bool {
		h := fnv.New64a() // not the id's bytes: a UUID's version and variant bits are fixed
		h.Write(e.EventID[:])
		if h.Sum64() > limit {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if seen[e.EventID] {
			return false
		}
		seen[e.EventID] = true
		return true
	}
}
