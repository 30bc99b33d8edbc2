package jobs

import (
	"testing"
	"time"
)

func TestSweepSchedule(t *testing.T) {
	t.Run("SplayIsStableAndDiffersBetweenServices", func(t *testing.T) {
		a, b := Splay("billing"), Splay("shipping")
		if a != Splay("billing") || b != Splay("shipping") {
			t.Fatal("the splay changed between calls")
		}
		if a == b {
			t.Fatalf("billing and shipping share minute %d", a)
		}
		// FNV-1a 32 of "billing" is a fixed number: the minute must not depend on the process.
		if a != 52 || b != 11 {
			t.Fatalf("splay billing=%d shipping=%d; FNV-1a mod 60 gives 52 and 11", a, b)
		}
	})

	t.Run("TheDefaultCronTakesTheSplayAsItsMinute", func(t *testing.T) {
		s, ok := SweepSchedule(DefaultSweepCron, "billing")
		if !ok {
			t.Fatal("default cron not registrable")
		}
		next := s.Next(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
		if next != time.Date(2026, 11, 30, 3, 52, 0, 0, time.UTC) {
			t.Fatalf("next sweep %s, want 2026-11-30 03:52 UTC", next)
		}
	})

	t.Run("AnExplicitDailyCronIsKeptAsWritten", func(t *testing.T) {
		s, ok := SweepSchedule("15 5 * * *", "billing")
		if !ok {
			t.Fatal("daily cron not registrable")
		}
		if next := s.Next(time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)); next != time.Date(2026, 11, 29, 5, 15, 0, 0, time.UTC) {
			t.Fatalf("next sweep %s", next)
		}
	})

	t.Run("AnUnregistrableCronFallsBackToTheCounter", func(t *testing.T) {
		for _, cron := range []string{"*/5 * * * *", "0 3 * * 1", "garbage", "61 3 * * *"} {
			if _, ok := SweepSchedule(cron, "billing"); ok {
				t.Fatalf("cron %q was registered", cron)
			}
		}
		e := &everyNth{n: 3}
		var due []bool
		for range 6 {
			due = append(due, e.due())
		}
		if due[0] || due[1] || !due[2] || due[3] || due[4] || !due[5] {
			t.Fatalf("every 3rd audit: %v", due)
		}
	})
}
