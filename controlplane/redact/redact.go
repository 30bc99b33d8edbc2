// Package redact takes secrets out of text before it is logged or printed: the passwords and
// tokens a --database-url or --nats-url may carry, alone or inside an error that wraps them. It
// owns only that rule; it touches no connection and no configuration.
package redact

import "regexp"

var (
	// userinfoPassword is the password of a URL's user:password@ (postgres://, nats://, …).
	userinfoPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*):[^@\s/]*@`)
	// secretParameter is a password or token given as a URL parameter or a keyword of a
	// PostgreSQL connection string (password=…, token=…, sslpassword=…).
	// natsToken is a NATS URL's token given alone as its userinfo (nats://token@host).
	natsToken       = regexp.MustCompile(`((?:nats|tls|ws|wss)://)[^:/@\s]+@`)
	secretParameter = regexp.MustCompile(`(?i)\b((?:ssl)?password|token|auth_token|nkey|jwt)=('[^']*'|[^&\s]*)`)
)

// String returns s with every secret it carries as a URL or connection-string part replaced by
// xxxxx: the password of user:password@ in any URL, a NATS URL's token (nats://token@), and password=, token= (and the like)
// parameters. It takes whole strings, so an error that wraps a URL is redacted as well as the
// URL itself; every log line and error that may carry --database-url or --nats-url passes
// through it.
func String(s string) string {
	s = userinfoPassword.ReplaceAllString(s, "${1}:xxxxx@")
	s = natsToken.ReplaceAllString(s, "${1}xxxxx@")
	return secretParameter.ReplaceAllString(s, "${1}=xxxxx")
}
