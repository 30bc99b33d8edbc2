package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// HistoryChange is one announced change of an origin's sealed history (history_changes.sql): the
// event EventID was removed, or reclassified to Flags.
type HistoryChange struct {
	ChangeID  int64  `json:"change_id"`
	Kind      string `json:"kind"`
	EventID   string `json:"event_id"`
	Tenant    string `json:"tenant,omitempty"`
	EventType string `json:"event_type,omitempty"`
	StreamID  string `json:"stream_id,omitempty"`
	OriginSeq int64  `json:"origin_seq,omitempty"`
	Flags     int    `json:"flags"`
}

// HistoryChangesPage is one page of this origin's history changes for a requester: Changes (of
// its granted types only), Through (its next cursor: the highest change scanned, listed or not)
// and More (changes remain above Through).
type HistoryChangesPage struct {
	Changes []HistoryChange
	Through int64
	More    bool
}

// HistoryChangesAfter reads up to max of this origin's history changes above after, listing
// those of the (tenant, type) pairs requester is granted (streamseal.history_changes_page). Recorders are serialized to commit (the
// generation row lock), so the cursor it returns never passes a change that commits later.
func HistoryChangesAfter(ctx context.Context, db Querier, after int64, requester string, max int) (HistoryChangesPage, error) {
	var page HistoryChangesPage
	var body []byte
	if err := db.QueryRow(ctx, "select through, more, changes from streamseal.history_changes_page($1, $2, $3)",
		after, requester, max).Scan(&page.Through, &page.More, &body); err != nil {
		return HistoryChangesPage{}, classify("read history changes", err)
	}
	if err := json.Unmarshal(body, &page.Changes); err != nil {
		return HistoryChangesPage{}, fmt.Errorf("read history changes: %w", err)
	}
	return page, nil
}

// HistoryChangesApply applies origin's announced history changes to this store's copies, each
// once, and moves its cursor to through (streamseal.apply_history_changes). Returns how many
// copies changed.
func HistoryChangesApply(ctx context.Context, db Querier, origin string, changes []HistoryChange, through int64) (int64, error) {
	if changes == nil {
		changes = []HistoryChange{}
	}
	body, err := json.Marshal(changes)
	if err != nil {
		return 0, fmt.Errorf("apply history changes: %w", err)
	}
	var changed int64
	if err := db.QueryRow(ctx, "select streamseal.apply_history_changes($1, $2::jsonb, $3)", origin, body, through).Scan(&changed); err != nil {
		return 0, classify("apply history changes of "+origin, err)
	}
	return changed, nil
}

// HistoryCursor returns the highest history change of origin this store applied (0: none).
func HistoryCursor(ctx context.Context, db Querier, origin string) (int64, error) {
	var cursor int64
	if err := db.QueryRow(ctx, "select streamseal.copy_history_cursor($1)", origin).Scan(&cursor); err != nil {
		return 0, classify("read history cursor of "+origin, err)
	}
	return cursor, nil
}
