package listing

import (
	"crypto/sha256"
	"encoding/json"
)

// ContentHash is the SHA-256 of the content of loc, as the warehouse keeps
// it in listing_versions.content_hash: every field of spec 2.14 but id,
// status and errors, encoded as JSON by encoding/json (fields in the
// struct's order; holidayHours null when it has no entry). A new version of
// a location starts when its hash changes. The definition must not change:
// stored hashes are compared with new ones.
func ContentHash(loc Location) []byte {
	c := loc
	c.ID, c.Status, c.Errors = "", "", nil
	if len(c.HolidayHours) == 0 {
		c.HolidayHours = nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		// Strings, slices and structs of strings always encode.
		panic("listing: encoding a location: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return sum[:]
}
