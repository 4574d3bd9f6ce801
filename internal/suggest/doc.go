// Package suggest finds the name someone probably meant when they mistyped
// one: the did-you-mean of the filter language's field names and of the
// job spec's keys, endpoints and scopes. It is the one home of that rule, so
// every message suggests the same way.
package suggest
