// The floor's protocol parts (see floor.go): Kafka frames, the primitive types of Kafka's
// message schemas, the OffsetCommit v8/v9 request and answer (Kafka's OffsetCommitRequest.json and
// OffsetCommitResponse.json), record batches, and the state partition of a group.
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"unicode/utf16"
)

const (
	apiProduce      = 0
	apiMetadata     = 3
	apiOffsetCommit = 8

	errNone                    = 0
	errCoordinatorNotAvailable = 15

	keySize    = 40         // an offset record's key size in kshim's state topic
	valueSize  = 44         // and its value size
	roundBytes = 768 * 1024 // kshim's ROUND_BYTES: a round stays below the broker's 1 MB batch limit
	maxFrame   = 100 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ---------------------------------------------------------------- frames

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxFrame {
		return nil, fmt.Errorf("frame size %d", n)
	}
	body := make([]byte, n)
	_, err := io.ReadFull(r, body)
	return body, err
}

// framed prefixes body (built after 4 reserved bytes) with its size.
func framed(buf []byte) []byte {
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// ---------------------------------------------------------------- decoding

// decoder reads Kafka's primitive types; the first error sticks and later reads return zeros.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || d.off+n > len(d.b) {
		d.err = errors.New("truncated message")
		return nil
	}
	out := d.b[d.off : d.off+n]
	d.off += n
	return out
}

func (d *decoder) int16() int16 {
	if b := d.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (d *decoder) int32() int32 {
	if b := d.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (d *decoder) int64() int64 {
	if b := d.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.err = errors.New("bad unsigned varint")
		return 0
	}
	d.off += n
	return v
}

// str reads a non-flexible string (int16 length, -1 = null).
func (d *decoder) str() string {
	n := d.int16()
	if n < 0 {
		return ""
	}
	return string(d.take(int(n)))
}

// compactStr reads a compact (nullable) string: unsigned varint length + 1, 0 = null.
func (d *decoder) compactStr() string {
	n := d.uvarint()
	if n == 0 {
		return ""
	}
	return string(d.take(int(n - 1)))
}

// compactLen reads a compact array's length (unsigned varint count + 1, 0 = null).
func (d *decoder) compactLen() int {
	n := d.uvarint()
	if n == 0 {
		return 0
	}
	return int(n - 1)
}

func (d *decoder) skipTags() {
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		d.uvarint()
		d.take(int(d.uvarint()))
	}
}

// ---------------------------------------------------------------- encoding

func putInt16(b []byte, v int16) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func putInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func putInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

func putStr(b []byte, s string) []byte { return append(putInt16(b, int16(len(s))), s...) }

func putCompactStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))+1), s...)
}

// requestHeaderV1 starts a non-flexible request (4 bytes reserved for the frame size).
func requestHeaderV1(apiKey, version int16, correlation int32) []byte {
	b := make([]byte, 4, 256)
	b = putInt16(b, apiKey)
	b = putInt16(b, version)
	b = putInt32(b, correlation)
	return putStr(b, "kshim-floor")
}

// ---------------------------------------------------------------- OffsetCommit

type commitTopic struct {
	name       string
	partitions []int32
}

type commitRequest struct {
	correlation int32
	group       string
	topics      []commitTopic
	records     int // committed partitions: one state record each
}

// isCommit says whether a request frame is an OffsetCommit the floor answers (v8 or v9).
func isCommit(frame []byte) bool {
	if len(frame) < 4 || int16(binary.BigEndian.Uint16(frame)) != apiOffsetCommit {
		return false
	}
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	return version == 8 || version == 9
}

// parseOffsetCommit reads an OffsetCommit v8/v9 request: header v2, then the body of Kafka's
// OffsetCommitRequest.json at those versions (offsets, epochs and metadata are read and dropped).
func parseOffsetCommit(frame []byte) (*commitRequest, error) {
	d := &decoder{b: frame}
	d.int16() // api key
	d.int16() // api version
	req := &commitRequest{correlation: d.int32()}
	d.str() // client id
	d.skipTags()
	req.group = d.compactStr()
	d.int32()      // generation id or member epoch
	d.compactStr() // member id
	d.compactStr() // group instance id
	topics := d.compactLen()
	for i := 0; i < topics && d.err == nil; i++ {
		t := commitTopic{name: d.compactStr()}
		parts := d.compactLen()
		for j := 0; j < parts && d.err == nil; j++ {
			t.partitions = append(t.partitions, d.int32())
			d.int64()      // committed offset
			d.int32()      // committed leader epoch
			d.compactStr() // committed metadata
			d.skipTags()
		}
		d.skipTags()
		req.topics = append(req.topics, t)
		req.records += len(t.partitions)
	}
	d.skipTags()
	return req, d.err
}

// offsetCommitResponse encodes the v8/v9 answer: response header v1, then every partition with `code`.
func offsetCommitResponse(req *commitRequest, code int16) []byte {
	b := make([]byte, 4, 64+32*len(req.topics))
	b = putInt32(b, req.correlation)
	b = append(b, 0)   // header tagged fields
	b = putInt32(b, 0) // throttle time
	b = binary.AppendUvarint(b, uint64(len(req.topics))+1)
	for _, t := range req.topics {
		b = putCompactStr(b, t.name)
		b = binary.AppendUvarint(b, uint64(len(t.partitions))+1)
		for _, p := range t.partitions {
			b = putInt32(b, p)
			b = putInt16(b, code)
			b = append(b, 0)
		}
		b = append(b, 0)
	}
	return framed(append(b, 0))
}

// recordBatch encodes one RecordBatch v2 (Kafka's DefaultRecordBatch; shim/state/batch.py) of n
// records with the same body `record` (key, value, headers after the offset delta) stamped now.
func recordBatch(record []byte, n int, now int64) []byte {
	b := make([]byte, 0, 61+n*(len(record)+8))
	b = putInt64(b, 0)  // base offset (the broker assigns)
	b = putInt32(b, 0)  // batch length, set below
	b = putInt32(b, -1) // partition leader epoch
	b = append(b, 2)    // magic
	b = putInt32(b, 0)  // crc, set below
	crcFrom := len(b)
	b = putInt16(b, 0) // attributes: no compression, CreateTime, not transactional
	b = putInt32(b, int32(n-1))
	b = putInt64(b, now)
	b = putInt64(b, now)
	b = putInt64(b, -1) // producer id
	b = putInt16(b, -1) // producer epoch
	b = putInt32(b, -1) // base sequence
	b = putInt32(b, int32(n))
	var head [24]byte
	for i := 0; i < n; i++ {
		// attributes 0, timestamp delta 0, offset delta i, then key, value, headers
		h := append(head[:0], 0, 0)
		h = binary.AppendVarint(h, int64(i))
		b = binary.AppendVarint(b, int64(len(h)+len(record)))
		b = append(append(b, h...), record...)
	}
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[crcFrom-4:], crc32.Checksum(b[crcFrom:], castagnoli))
	return b
}

// partitionFor is Java's String.hashCode of the group id (over UTF-16 code units) & 0x7fffffff
// modulo the partition count.
func partitionFor(group string, partitions int) int {
	var h int32
	for _, c := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(c)
	}
	return int(h&0x7fffffff) % partitions
}
