// Package redelivery is the repair exchange, all three parts of it: a consumer asks an origin
// for events (Request, and the operator's `streamseal repair` in operator.go), the origin serves
// the request from its own lane in bounded bundles (Server, serve.go), and the consumer stores
// what comes back with its identity intact (Receiver, receiver.go). An origin re-delivers only
// its own lane and only what the requester is granted; the selection and the authorization are
// SQL's.
package redelivery
