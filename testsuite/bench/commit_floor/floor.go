// Command floor is a benchmark floor for kshim's durable commit path (scripts/bench-commits
// --proxy-floor): a compiled proxy that does only what kshim must do to acknowledge an
// OffsetCommit durably, and nothing else (no group state, no validation, no offset cache).
//
//	floor -listen 127.0.0.1:PORT -upstream HOST:PORT -topic NAME -partitions N [-loop]
//
// This file holds the goroutine mode and main; floor_loop.go the -loop mode (the same work in
// one epoll loop on one thread); floor_wire.go the protocol parts. Build: go build -o floor *.go
//
// Each client connection is served by one goroutine, one request at a time, in order. An
// OffsetCommit v8 or v9 (flexible; both have the same layout in Kafka's OffsetCommitRequest.json)
// is answered by the floor itself: one offset-record-sized record (key 40 bytes, value 44 bytes,
// fixed contents) per committed partition is queued for the state partition of the group
// (Java's String.hashCode of the group id & 0x7fffffff modulo N, as kshim's
// shim/state/format.partition_for and Kafka's GroupCoordinatorService#partitionFor), and the
// answer (every partition error 0) is written only after the broker acknowledged the Produce that
// carried those records with acks=all and no error; otherwise every partition gets
// COORDINATOR_NOT_AVAILABLE (15). Every other request is forwarded unchanged to the upstream
// broker on the client's own upstream connection and the broker's answer is relayed unchanged.
//
// One writer goroutine appends, as kshim's shim/state/log.py StateLog does: a round takes
// everything queued since the previous round (up to 768 KiB of records), packs one uncompressed
// RecordBatch v2 per state partition (the layout of shim/state/batch.py and Kafka's
// DefaultRecordBatch) and sends one Produce v8 (acks -1) per partition leader, all in flight at
// once, on its own connections; it waits for the answers, releases the commits of that round,
// then starts the next round. No retries: a failed round answers 15 and the next round
// refreshes the leaders first.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"net"
	"strconv"
	"sync"
	"time"
)

// ---------------------------------------------------------------- client connections

type proxy struct {
	upstream   string
	partitions int
	writer     *writer
}

func (p *proxy) serve(conn net.Conn) {
	defer conn.Close()
	in := bufio.NewReaderSize(conn, 64*1024)
	var up net.Conn // this client's upstream connection, dialled at its first forwarded request
	var upIn *bufio.Reader
	defer func() {
		if up != nil {
			up.Close()
		}
	}()
	for {
		frame, err := readFrame(in)
		if err != nil {
			return
		}
		if isCommit(frame) {
			req, err := parseOffsetCommit(frame)
			if err != nil {
				log.Printf("%s: OffsetCommit: %v", conn.RemoteAddr(), err)
				return
			}
			code := int16(errNone)
			if req.records > 0 {
				c := &commit{part: partitionFor(req.group, p.partitions), records: req.records,
					done: make(chan int16, 1)}
				p.writer.in <- c
				if <-c.done != errNone {
					code = errCoordinatorNotAvailable
				}
			}
			if _, err := conn.Write(offsetCommitResponse(req, code)); err != nil {
				return
			}
			continue
		}
		if up == nil {
			if up, err = net.Dial("tcp", p.upstream); err != nil {
				log.Printf("upstream %s: %v", p.upstream, err)
				return
			}
			upIn = bufio.NewReaderSize(up, 64*1024)
		}
		out := make([]byte, 4, 4+len(frame))
		if _, err := up.Write(framed(append(out, frame...))); err != nil {
			return
		}
		answer, err := readFrame(upIn)
		if err != nil {
			return
		}
		out = make([]byte, 4, 4+len(answer))
		if _, err := conn.Write(framed(append(out, answer...))); err != nil {
			return
		}
	}
}

// ---------------------------------------------------------------- the writer

// commit is one OffsetCommit's records waiting for a round: `records` offset records for state
// partition `part`; the round's result for that partition goes to done.
type commit struct {
	part    int
	records int
	done    chan int16
}

// brokerConn is the writer's connection to one broker (one request in flight on it at a time).
type brokerConn struct {
	conn        net.Conn
	in          *bufio.Reader
	correlation int32
}

func (c *brokerConn) roundTrip(req []byte) (*decoder, error) {
	if _, err := c.conn.Write(req); err != nil {
		return nil, err
	}
	frame, err := readFrame(c.in)
	if err != nil {
		return nil, err
	}
	d := &decoder{b: frame}
	if got := d.int32(); got != c.correlation {
		return nil, fmt.Errorf("correlation id %d, expected %d", got, c.correlation)
	}
	return d, nil
}

type writer struct {
	in         chan *commit
	upstream   string
	topic      string
	partitions int
	brokers    map[int32]string // node id -> host:port
	leaders    map[int]int32    // state partition -> leader node id
	conns      map[int32]*brokerConn
	record     []byte // one record's body after its offset delta (key and value with lengths, no headers)
}

func newWriter(upstream, topic string, partitions int) *writer {
	w := &writer{in: make(chan *commit, 8192), upstream: upstream, topic: topic, partitions: partitions,
		conns: map[int32]*brokerConn{}}
	r := binary.AppendVarint(nil, keySize)
	for i := 0; i < keySize; i++ {
		r = append(r, 'k')
	}
	r = binary.AppendVarint(r, valueSize)
	for i := 0; i < valueSize; i++ {
		r = append(r, 'v')
	}
	w.record = append(r, 0) // no headers
	return w
}

func (w *writer) dial(addr string) (*brokerConn, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &brokerConn{conn: conn, in: bufio.NewReaderSize(conn, 64*1024)}, nil
}

// refresh asks the upstream broker (Metadata v4, no topic auto-creation) for the brokers and the
// state topic's leaders; an error unless every partition has a leader.
func (w *writer) refresh() error {
	c, err := w.dial(w.upstream)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	c.correlation = 1
	req := requestHeaderV1(apiMetadata, 4, c.correlation)
	req = putInt32(req, 1)
	req = putStr(req, w.topic)
	req = append(req, 0) // allow auto topic creation: false
	d, err := c.roundTrip(framed(req))
	if err != nil {
		return err
	}
	d.int32() // throttle time
	brokers := map[int32]string{}
	for n := d.int32(); n > 0 && d.err == nil; n-- {
		id := d.int32()
		host := d.str()
		port := d.int32()
		d.str() // rack
		brokers[id] = net.JoinHostPort(host, strconv.Itoa(int(port)))
	}
	d.str()   // cluster id
	d.int32() // controller id
	leaders := map[int]int32{}
	for n := d.int32(); n > 0 && d.err == nil; n-- {
		code := d.int16()
		name := d.str()
		d.take(1) // is internal
		for m := d.int32(); m > 0 && d.err == nil; m-- {
			d.int16() // partition error
			p := d.int32()
			leader := d.int32()
			d.take(4 * int(d.int32())) // replicas
			d.take(4 * int(d.int32())) // in-sync replicas
			if name == w.topic && code == errNone && leader >= 0 {
				leaders[int(p)] = leader
			}
		}
	}
	if d.err != nil {
		return d.err
	}
	if len(leaders) != w.partitions {
		return fmt.Errorf("topic %s: %d of %d partitions have a leader", w.topic, len(leaders), w.partitions)
	}
	w.brokers, w.leaders = brokers, leaders
	return nil
}

// conn is the writer's connection to broker `leader`, dialled when missing (nil if it cannot be).
func (w *writer) conn(leader int32) *brokerConn {
	if c := w.conns[leader]; c != nil {
		return c
	}
	addr, ok := w.brokers[leader]
	if !ok {
		return nil
	}
	c, err := w.dial(addr)
	if err != nil {
		log.Printf("state broker %d: %v", leader, err)
		return nil
	}
	w.conns[leader] = c
	return c
}

// produceRequest is a Produce v8 (acks=all, framed) carrying counts[p] records for each partition p.
func (w *writer) produceRequest(correlation int32, counts map[int]int, now int64) []byte {
	req := requestHeaderV1(apiProduce, 8, correlation)
	req = putInt16(req, -1)   // transactional id: null
	req = putInt16(req, -1)   // acks: all
	req = putInt32(req, 5000) // timeout ms
	req = putInt32(req, 1)
	req = putStr(req, w.topic)
	req = putInt32(req, int32(len(counts)))
	for p, n := range counts {
		records := recordBatch(w.record, n, now)
		req = putInt32(req, int32(p))
		req = putInt32(req, int32(len(records)))
		req = append(req, records...)
	}
	return framed(req)
}

// produceCodes reads a Produce v8 answer (after its correlation id): each partition's error code.
func produceCodes(d *decoder) (map[int]int16, error) {
	out := map[int]int16{}
	for n := d.int32(); n > 0 && d.err == nil; n-- {
		d.str() // topic
		for m := d.int32(); m > 0 && d.err == nil; m-- {
			p := int(d.int32())
			code := d.int16()
			d.int64() // base offset
			d.int64() // log append time
			d.int64() // log start offset
			for k := d.int32(); k > 0 && d.err == nil; k-- {
				d.int32() // batch index
				d.str()   // its message
			}
			d.str() // error message
			out[p] = code
		}
	}
	return out, d.err
}

// produce sends the Produce of `counts` on c and returns each partition's error code (an error
// when the broker could not answer).
func (w *writer) produce(c *brokerConn, counts map[int]int, now int64) (map[int]int16, error) {
	c.correlation++
	d, err := c.roundTrip(w.produceRequest(c.correlation, counts, now))
	if err != nil {
		return nil, err
	}
	return produceCodes(d)
}

// round appends the records of `commits` (one Produce per partition leader, all in flight at
// once) and answers each commit with its partition's result.
func (w *writer) round(commits []*commit) {
	byLeader := map[int32]map[int]int{}
	for _, c := range commits {
		leader := w.leaders[c.part]
		if byLeader[leader] == nil {
			byLeader[leader] = map[int]int{}
		}
		byLeader[leader][c.part] += c.records
	}
	now := time.Now().UnixMilli()
	codes := map[int]int16{} // a partition missing from the broker's answers counts as failed
	var mu sync.Mutex
	var wg sync.WaitGroup
	send := func(leader int32, c *brokerConn, counts map[int]int) {
		res, err := w.produce(c, counts, now)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			log.Printf("state append to broker %d: %v", leader, err)
			c.conn.Close()
			c.conn = nil
			return
		}
		for p, code := range res {
			if _, ok := counts[p]; ok {
				codes[p] = code
			}
		}
	}
	for leader, counts := range byLeader {
		c := w.conn(leader)
		if c == nil {
			continue
		}
		if len(byLeader) == 1 { // the usual case on one broker: no goroutine
			send(leader, c, counts)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(leader, c, counts)
		}()
	}
	wg.Wait()
	for leader, c := range w.conns {
		if c.conn == nil {
			delete(w.conns, leader)
		}
	}
	failed := false
	for _, c := range commits {
		code, ok := codes[c.part]
		if !ok {
			code = errCoordinatorNotAvailable
		}
		failed = failed || code != errNone
		c.done <- code
	}
	if failed {
		w.roundFailed(codes)
	}
}

// roundFailed logs a failed round's error codes (by state partition; none: no answer) and refreshes
// the leaders for the next round (no retries: the round's commits were answered 15).
func (w *writer) roundFailed(codes map[int]int16) {
	log.Printf("state append to %s failed: error codes %v", w.topic, codes)
	if err := w.refresh(); err != nil {
		log.Printf("metadata of %s: %v", w.topic, err)
	}
}

// run sends rounds forever: each takes what was queued meanwhile (at most roundBytes of records).
func (w *writer) run() {
	var queued []*commit
	for {
		if len(queued) == 0 {
			queued = append(queued, <-w.in)
		}
	drain:
		for {
			select {
			case c := <-w.in:
				queued = append(queued, c)
			default:
				break drain
			}
		}
		n, size := 0, 0
		for n < len(queued) {
			size += queued[n].records * (keySize + valueSize + 32) // kshim's size estimate
			if n > 0 && size > roundBytes {
				break
			}
			n++
		}
		w.round(queued[:n])
		queued = append(queued[:0:0], queued[n:]...)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:9192", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:9092", "the Kafka broker")
	topic := flag.String("topic", "__kshim_group_state", "the state topic (must exist)")
	partitions := flag.Int("partitions", 4, "the state topic's partition count")
	loopMode := flag.Bool("loop", false, "serve with one epoll loop on one thread (floor_loop.go)")
	flag.Parse()
	if *partitions < 1 {
		log.Fatal("-partitions must be at least 1")
	}
	w := newWriter(*upstream, *topic, *partitions)
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := w.refresh()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			log.Fatalf("state topic %s: %v", *topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("floor listening on %s (state topic %s, %d partitions, upstream %s, loop %v)", ln.Addr(), *topic,
		*partitions, *upstream, *loopMode)
	if *loopMode {
		log.Fatal(runLoop(w, *upstream, ln.(*net.TCPListener)))
	}
	go w.run()
	p := &proxy{upstream: *upstream, partitions: *partitions, writer: w}
	for {
		conn, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go p.serve(conn)
	}
}
