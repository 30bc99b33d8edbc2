package wire_test

import (
	"context"
	"testing"

	"github.com/streamseal/streamseal/internal/natstest"
)

// A control endpoint stopped while it is still creating its consumers has not failed: Run returns
// nil, as it does when stopped later and as the inbox does. Returning the cancelled creation as
// an error made a test that stops an endpoint early on a loaded machine fail
// (TestAuditor/EveryChunkOfAManyChunkAnswerArrivesUnderLoad_Invariant14 in CI: "control consumer
// for billing on streamseal.ctl._all.*: context canceled"), and a node would report a loop error
// for a clean stop.
func TestControl_StoppedWhileCreatingItsConsumersReturnsNil(t *testing.T) {
	srv := natstest.Start(t)
	_, js := srv.Connect(t, "billing")
	c := natstest.Control(t, js, "billing")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatalf("Run stopped before its consumers existed = %v, want nil", err)
	}
}
