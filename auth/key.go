package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of the secret key in bytes: AES-256.
const KeySize = 32

// ErrNoKey is returned (wrapped) when tokens must be stored or read and no
// key was given: tokens are never stored in clear.
var ErrNoKey = errors.New("no ETL_SECRET_KEY: tokens are stored only encrypted; on the local warehouse, " +
	"eval \"$(etl local env)\" sets the key its tokens were stored with; elsewhere make a key with `openssl rand -base64 32`, " +
	"keep it like a password, and set ETL_SECRET_KEY to it in every process that shares the warehouse")

// Key encrypts and decrypts tokens at rest: AES-256-GCM, a random nonce per
// value, the account's name and the column bound in as additional data so
// that a value copied to another row or column does not decrypt. Its
// String never shows the key.
type Key struct {
	aead cipher.AEAD
	fp   string
}

// ParseKey reads a key as ETL_SECRET_KEY holds it: 32 random bytes in
// base64 (standard or URL alphabet, padded or not). The error never quotes
// the value.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, ErrNoKey
	}
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	switch {
	case err != nil:
		return nil, errors.New("ETL_SECRET_KEY is not base64: make a key with `openssl rand -base64 32`")
	case len(raw) != KeySize:
		return nil, fmt.Errorf("ETL_SECRET_KEY must be %d bytes in base64, got %d bytes: make a key with `openssl rand -base64 32`", KeySize, len(raw))
	}
	return newKey(raw)
}

// NewKey returns a new random key and its base64 form, for ETL_SECRET_KEY.
func NewKey() (*Key, string, error) {
	raw := make([]byte, KeySize)
	_, _ = rand.Read(raw) // never fails (crypto/rand)
	k, err := newKey(raw)
	return k, base64.StdEncoding.EncodeToString(raw), err
}

func newKey(raw []byte) (*Key, error) {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	return &Key{aead: aead, fp: hex.EncodeToString(sum[:4])}, nil
}

// String hides the key.
func (k *Key) String() string { return "auth.Key(hidden)" }

// Fingerprint names the key without showing it: the first 8 hex digits of
// the SHA-256 of its 32 bytes (4 bytes of a hash of 32 random bytes tell
// nothing of them). It is stored with the tokens, so a key that does not
// open them can say which key did.
func (k *Key) Fingerprint() string { return k.fp }

// seal encrypts plain for the column of the account: the nonce, then the
// sealed bytes.
func (k *Key) seal(account, column, plain string) []byte {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	_, _ = rand.Read(nonce)
	return k.aead.Seal(nonce, nonce, []byte(plain), additional(account, column))
}

// errWrongKey is the cause of a value that does not decrypt; load turns
// it into a *WrongKeyError.
var errWrongKey = errors.New("the tokens do not decrypt with ETL_SECRET_KEY")

// WrongKeyError is the error of tokens that do not open with the key
// given: they were stored with another. It names both keys by their
// fingerprints, never the keys.
type WrongKeyError struct {
	Account string
	// Given is the fingerprint of the key that failed; Stored that of the
	// key the tokens were stored with, "" for tokens stored before
	// fingerprints were (migration 0020).
	Given, Stored string
}

func (e *WrongKeyError) Error() string {
	before := "another key (stored before etl kept key fingerprints)"
	if e.Stored != "" {
		before = "the key of fingerprint " + e.Stored
	}
	return fmt.Sprintf("the tokens of account %s do not decrypt with ETL_SECRET_KEY (fingerprint %s): they were stored with %s. "+
		"Set ETL_SECRET_KEY to that key (for the local warehouse: eval \"$(etl local env)\"), "+
		"or sign the account in again with this one: `etl auth login --account %s`", e.Account, e.Given, before, e.Account)
}

// Permanent is true: no retry opens the tokens with the same key.
func (e *WrongKeyError) Permanent() bool { return true }

// open decrypts what seal made for the column of the account.
func (k *Key) open(account, column string, sealed []byte) (string, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return "", errWrongKey
	}
	plain, err := k.aead.Open(nil, sealed[:n], sealed[n:], additional(account, column))
	if err != nil {
		return "", errWrongKey
	}
	return string(plain), nil
}

func additional(account, column string) []byte {
	return []byte("etl accounts\x00" + account + "\x00" + column)
}
