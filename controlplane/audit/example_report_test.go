package audit_test

import (
	"os"

	"github.com/streamseal/streamseal/controlplane/audit"
	"github.com/streamseal/streamseal/controlplane/config"
)

// WriteFindings prints what `streamseal audit` prints after a round: per origin, the window, its
// divergent buckets by reason, the repair requests and the seal.
func ExampleWriteFindings() {
	findings := []audit.Finding{
		{Origin: "orders", From: 100, To: 5000, Requests: 1, Divergent: []audit.Bucket{
			{Stream: "order-7", Tenant: "acme", Type: "order.placed", Reason: "deficit", LocalN: 3, OriginN: 5},
			{Stream: "order-9", Tenant: "acme", Type: "order.placed", Reason: "local_extra", LocalN: 2, OriginN: 1},
		}},
		{Origin: "shipping", From: 0, To: 800, Sealed: true, SealedThrough: 800},
		{Origin: "billing", Skipped: "no answer within 30s"},
	}
	audit.WriteFindings(os.Stdout, findings, config.AutoRepairCapped)
	audit.WriteFindings(os.Stdout, findings[:1], config.ReportOnly)
	audit.WriteFindings(os.Stdout, nil, config.AutoRepairCapped)
	// Output:
	// audit orders: window [100, 5000): 2 divergent buckets (deficit 1, identity_mismatch 0, local_extra 1)
	//   deficit           acme/order.placed stream order-7: local n=3, origin n=5
	//   local_extra       acme/order.placed stream order-9: local n=2, origin n=1
	// audit orders: repair requests sent: 1
	// audit shipping: window [0, 800): 0 divergent buckets (deficit 0, identity_mismatch 0, local_extra 0)
	// audit shipping: repair requests sent: 0
	// audit shipping: window certified; seal now 800
	// audit billing: skipped: no answer within 30s
	// audit orders: window [100, 5000): 2 divergent buckets (deficit 1, identity_mismatch 0, local_extra 1)
	//   deficit           acme/order.placed stream order-7: local n=3, origin n=5
	//   local_extra       acme/order.placed stream order-9: local n=2, origin n=1
	// audit orders: repair requests would send (report-only): 1
	// audit: no known origin (this service learns origins from their checkpoints)
}
