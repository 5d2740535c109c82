// The floor's `-loop` mode: the same work as the goroutine mode of floor.go, done by one thread
// running one epoll loop over non-blocking sockets, the shape of kshim's own asyncio loop (one
// thread: reads requests, queues records, sends a round, answers its commits) without the Go
// scheduler's hand-offs between goroutines and threads. Client sockets and the writer's broker
// connections are registered edge-triggered; a round starts after each batch of events when none
// is in flight, so it carries everything queued meanwhile. Requests other than OffsetCommit v8/v9
// are forwarded on a blocking upstream connection from inside the loop (the loop waits for the
// broker's answer: fine for the committers' ApiVersions at connect, not for a client's traffic).
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"log"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
)

func nowMillis() int64 { return time.Now().UnixMilli() }

// sock is one non-blocking socket of the loop: a client, or the writer's connection to a broker.
type sock struct {
	fd     int
	in     []byte // bytes read, not yet a whole frame
	out    []byte // bytes to write once the socket takes them
	closed bool
	leader int32 // a broker connection: its node id; -1 for a client
	expect int32 // a broker connection: the correlation id of the Produce in flight
	busy   bool  // a client whose OffsetCommit waits for a round: its next frames wait too
	up     net.Conn
	upIn   *bufio.Reader
}

type loopCommit struct {
	s       *sock
	req     *commitRequest
	part    int
	records int
}

type loop struct {
	w           *writer
	upstream    string
	ep          int
	socks       map[int]*sock   // by fd
	brokers     map[int32]*sock // the writer's connections, by node id
	correlation int32
	queue       []*loopCommit
	round       []*loopCommit
	waiting     map[int32]bool // brokers whose Produce answer the round waits for
	sending     bool           // the round's Produces are being sent: not finished yet
	codes       map[int]int16  // the round's results by state partition
	buf         []byte
	listener    *os.File // (kept: its finalizer would close the listening socket)
}

func (l *loop) add(fd int, leader int32) (*sock, error) {
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1); err != nil {
		return nil, err
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT | syscall.EPOLLRDHUP | -syscall.EPOLLET,
		Fd: int32(fd)}
	if err := syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return nil, err
	}
	s := &sock{fd: fd, leader: leader}
	l.socks[fd] = s
	return s, nil
}

func (l *loop) close(s *sock) {
	if s.closed {
		return
	}
	s.closed = true
	delete(l.socks, s.fd)
	syscall.Close(s.fd) // (also leaves the epoll set)
	if s.up != nil {
		s.up.Close()
	}
	if s.leader >= 0 {
		delete(l.brokers, s.leader)
		if l.waiting[s.leader] {
			delete(l.waiting, s.leader) // its partitions get no code: the round fails them
			l.finishIfDone()
		}
	}
}

// send writes b now, or what the socket does not take when it can (EPOLLOUT).
func (l *loop) send(s *sock, b []byte) {
	if s.closed {
		return
	}
	if len(s.out) == 0 {
		n, err := syscall.Write(s.fd, b)
		if err != nil && err != syscall.EAGAIN {
			l.close(s)
			return
		}
		if n > 0 {
			b = b[n:]
		}
	}
	s.out = append(s.out, b...)
}

func (l *loop) flush(s *sock) {
	if len(s.out) > 0 {
		out := s.out
		s.out = nil
		l.send(s, out)
	}
}

// fill reads what the socket holds; false when the peer is gone. A short read means the socket
// was empty, and edge-triggered epoll reports data that comes later.
func (l *loop) fill(s *sock) bool {
	for {
		n, err := syscall.Read(s.fd, l.buf)
		if err == syscall.EAGAIN {
			return true
		}
		if err != nil || n == 0 {
			return false
		}
		s.in = append(s.in, l.buf[:n]...)
		if n < len(l.buf) {
			return true
		}
	}
}

// frame takes the next whole frame out of s.in (nil if none yet).
func frame(s *sock) []byte {
	if len(s.in) < 4 {
		return nil
	}
	size := int(binary.BigEndian.Uint32(s.in))
	if len(s.in) < 4+size {
		return nil
	}
	f := append([]byte(nil), s.in[4:4+size]...)
	s.in = append(s.in[:0], s.in[4+size:]...)
	return f
}

// serve handles a client's buffered requests until one waits for a round.
func (l *loop) serve(s *sock) {
	for !s.busy && !s.closed {
		f := frame(s)
		if f == nil {
			return
		}
		if isCommit(f) {
			req, err := parseOffsetCommit(f)
			if err != nil {
				log.Printf("OffsetCommit: %v", err)
				l.close(s)
				return
			}
			if req.records == 0 {
				l.send(s, offsetCommitResponse(req, errNone))
				continue
			}
			s.busy = true
			l.queue = append(l.queue, &loopCommit{s, req, partitionFor(req.group, l.w.partitions), req.records})
			continue
		}
		if err := l.forward(s, f); err != nil {
			log.Printf("upstream %s: %v", l.upstream, err)
			l.close(s)
		}
	}
}

func (l *loop) forward(s *sock, f []byte) error {
	if s.up == nil {
		up, err := net.Dial("tcp", l.upstream)
		if err != nil {
			return err
		}
		s.up, s.upIn = up, bufio.NewReaderSize(up, 64*1024)
	}
	if _, err := s.up.Write(framed(append(make([]byte, 4, 4+len(f)), f...))); err != nil {
		return err
	}
	answer, err := readFrame(s.upIn)
	if err != nil {
		return err
	}
	l.send(s, framed(append(make([]byte, 4, 4+len(answer)), answer...)))
	return nil
}

// dial connects to a broker (blocking), then hands the socket to the loop.
func (l *loop) dial(leader int32) *sock {
	if s := l.brokers[leader]; s != nil {
		return s
	}
	addr, err := net.ResolveTCPAddr("tcp", l.w.brokers[leader])
	if err != nil || addr.IP.To4() == nil {
		log.Printf("state broker %d at %q: %v (IPv4 only)", leader, l.w.brokers[leader], err)
		return nil
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	sa := &syscall.SockaddrInet4{Port: addr.Port}
	copy(sa.Addr[:], addr.IP.To4())
	if err = syscall.Connect(fd, sa); err == nil {
		err = syscall.SetNonblock(fd, true)
	}
	var s *sock
	if err == nil {
		s, err = l.add(fd, leader)
	}
	if err != nil {
		log.Printf("state broker %d: %v", leader, err)
		syscall.Close(fd)
		return nil
	}
	l.brokers[leader] = s
	return s
}

// startRound sends the Produce of what is queued (at most roundBytes of records), one per leader.
func (l *loop) startRound() {
	n, size := 0, 0
	for n < len(l.queue) {
		size += l.queue[n].records * (keySize + valueSize + 32)
		if n > 0 && size > roundBytes {
			break
		}
		n++
	}
	l.round = l.queue[:n:n]
	l.queue = append([]*loopCommit(nil), l.queue[n:]...)
	byLeader := map[int32]map[int]int{}
	for _, c := range l.round {
		leader := l.w.leaders[c.part]
		if byLeader[leader] == nil {
			byLeader[leader] = map[int]int{}
		}
		byLeader[leader][c.part] += c.records
	}
	now := nowMillis()
	l.codes = map[int]int16{}
	l.sending = true
	for leader, counts := range byLeader {
		if s := l.dial(leader); s != nil {
			l.correlation++
			s.expect = l.correlation
			l.waiting[leader] = true
			l.send(s, l.w.produceRequest(l.correlation, counts, now))
		}
	}
	l.sending = false
	l.finishIfDone()
}

// brokerAnswer reads the Produce answer on a broker connection.
func (l *loop) brokerAnswer(s *sock) {
	for f := frame(s); f != nil; f = frame(s) {
		d := &decoder{b: f}
		if d.int32() != s.expect || !l.waiting[s.leader] {
			log.Printf("state broker %d: unexpected correlation id", s.leader)
			l.close(s)
			return
		}
		codes, err := produceCodes(d)
		if err != nil {
			log.Printf("state broker %d: %v", s.leader, err)
			l.close(s)
			return
		}
		for p, code := range codes {
			l.codes[p] = code
		}
		delete(l.waiting, s.leader)
		l.finishIfDone()
	}
}

// finishIfDone answers the round's commits once every broker answered (or failed).
func (l *loop) finishIfDone() {
	if len(l.waiting) > 0 || l.round == nil || l.sending {
		return
	}
	round := l.round
	l.round = nil
	failed := false
	for _, c := range round {
		code, ok := l.codes[c.part]
		if !ok || code != errNone {
			code, failed = errCoordinatorNotAvailable, true
		}
		c.s.busy = false
		l.send(c.s, offsetCommitResponse(c.req, code))
	}
	for _, c := range round {
		l.serve(c.s) // requests that came while the commit waited
	}
	if failed {
		l.w.roundFailed(l.codes)
	}
}

// runLoop serves `ln`'s clients with one epoll loop on this thread; it returns only on an error.
func runLoop(w *writer, upstream string, ln *net.TCPListener) error {
	runtime.LockOSThread()
	f, err := ln.File() // a blocking duplicate of the listening socket
	if err != nil {
		return err
	}
	lfd := int(f.Fd())
	if err := syscall.SetNonblock(lfd, true); err != nil {
		return err
	}
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, lfd, &syscall.EpollEvent{Events: syscall.EPOLLIN,
		Fd: int32(lfd)}); err != nil {
		return err
	}
	l := &loop{w: w, upstream: upstream, ep: ep, socks: map[int]*sock{}, brokers: map[int32]*sock{},
		waiting: map[int32]bool{}, buf: make([]byte, 64*1024), listener: f}
	events := make([]syscall.EpollEvent, 256)
	for {
		n, err := syscall.EpollWait(ep, events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			if fd == lfd {
				l.accept(lfd)
				continue
			}
			s := l.socks[fd]
			if s == nil {
				continue
			}
			if ev.Events&syscall.EPOLLOUT != 0 {
				l.flush(s)
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && !s.closed {
				ok := l.fill(s)
				if s.leader >= 0 {
					l.brokerAnswer(s)
				} else {
					l.serve(s)
				}
				if !ok {
					l.close(s)
				}
			}
		}
		if l.round == nil && len(l.queue) > 0 {
			l.startRound()
		}
	}
}

func (l *loop) accept(lfd int) {
	for {
		fd, _, err := syscall.Accept4(lfd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if err != nil {
			if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.ECONNABORTED) {
				log.Printf("accept: %v", err)
			}
			return
		}
		if _, err := l.add(fd, -1); err != nil {
			log.Printf("client socket: %v", err)
			syscall.Close(fd)
		}
	}
}
