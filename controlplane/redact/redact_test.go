package redact

import "testing"

func TestRedactRemovesPasswordsAndTokens(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://app:hunter2@db:5432/orders?sslmode=disable":           "postgres://app:xxxxx@db:5432/orders?sslmode=disable",
		"connect to NATS nats://ops:s3cret@127.0.0.1:4222: nats: timeout": "connect to NATS nats://ops:xxxxx@127.0.0.1:4222: nats: timeout",
		"postgres://db/orders?user=app&password=hunter2&sslmode=disable":  "postgres://db/orders?user=app&password=xxxxx&sslmode=disable",
		"host=db user=app password='hunter 2' dbname=orders":              "host=db user=app password=xxxxx dbname=orders",
		"nats://127.0.0.1:4222?token=abc123":                              "nats://127.0.0.1:4222?token=xxxxx",
		"nats://tokenonly@127.0.0.1:4222":                                 "nats://xxxxx@127.0.0.1:4222",
		"postgres://app@db/orders":                                        "postgres://app@db/orders",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}
