// Package redact keeps secrets (API keys, tokens) out of logs and errors.
//
// A Redactor knows the literal secrets of this process and also removes any
// value of a `key=` query parameter and of an `Authorization` credential, so a
// secret it was never told about (a typo'd key in ETL_API_URL, a key echoed by
// a server) is removed too.
package redact
