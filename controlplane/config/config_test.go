package config

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestConfig(t *testing.T) {
	t.Run("DefaultsAreValid", func(t *testing.T) {
		if err := Defaults().Validate(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("FlagsOverrideEnvironmentOverrideDefaults", func(t *testing.T) {
		t.Setenv("STREAMSEAL_CHECKPOINT_INTERVAL", "30s")
		t.Setenv("STREAMSEAL_REPAIR_MODE", "report-only")
		c := Defaults()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		if err := c.RegisterFlags(fs); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse([]string{"--checkpoint-interval", "5s"}); err != nil {
			t.Fatal(err)
		}
		if c.CheckpointInterval != 5*time.Second || c.RepairMode != ReportOnly || c.LivenessIntervals != 3 {
			t.Fatalf("config = %+v", c)
		}
	})

	t.Run("BadValuesNameTheOptionAndTheRange", func(t *testing.T) {
		c := Defaults()
		c.RepairMode = "yolo"
		c.MaxAutoRepairRequestsPerCheckpoint = 0
		c.CheckpointInterval = 2 * time.Hour
		err := c.Validate()
		for _, want := range []string{`--repair-mode "yolo"`, "auto-repair-capped", "--max-auto-repair-requests-per-checkpoint 0", "1..10000", "--checkpoint-interval 2h0m0s", "10ms..1h0m0s"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v does not say %q", err, want)
			}
		}
	})

	t.Run("EventRetentionIsForeverOrAtLeastAnHour", func(t *testing.T) {
		for _, ok := range []time.Duration{0, time.Hour, 7 * 24 * time.Hour, 365 * 24 * time.Hour} {
			c := Defaults()
			c.EventRetention = ok
			if err := c.Validate(); err != nil {
				t.Fatalf("--event-retention %s refused: %v", ok, err)
			}
		}
		for _, bad := range []time.Duration{time.Minute, -time.Hour, 366 * 24 * time.Hour} {
			c := Defaults()
			c.EventRetention = bad
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--event-retention") || !strings.Contains(err.Error(), "0 (forever) or 1h0m0s..8760h0m0s") {
				t.Fatalf("--event-retention %s: %v; want a refusal naming the option and its range", bad, err)
			}
		}
	})

	t.Run("UnparsableEnvironmentIsRefusedByName", func(t *testing.T) {
		t.Setenv("STREAMSEAL_LIVENESS_INTERVALS", "three")
		c := Defaults()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		err := c.RegisterFlags(fs)
		if err == nil || !strings.Contains(err.Error(), "STREAMSEAL_LIVENESS_INTERVALS") {
			t.Fatalf("got %v, want an error naming STREAMSEAL_LIVENESS_INTERVALS", err)
		}
		if fs.Parse([]string{"--epoch-width", "ten"}) == nil {
			t.Fatal("an unparsable flag was accepted")
		}
	})
}

// The README's configuration table is the operator's reference: every option the binary takes
// from config appears there with its flag and its environment variable.
func TestReadmeConfigurationTableListsEveryOption(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	c := Defaults()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	if err := c.RegisterFlags(fs); err != nil {
		t.Fatal(err)
	}
	fs.VisitAll(func(f *flag.Flag) {
		env := "STREAMSEAL_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		row := "| `--" + f.Name + "` | `" + env + "` |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("README's configuration table has no row starting %q", row)
		}
	})
}
