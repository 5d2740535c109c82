// A TCP relay with no protocol logic, the floor any user-space proxy pays on a machine: the
// proxy benchmark (scripts/bench-proxy, its relay peers) puts it between Kafka's perf tools and a broker
// listener that advertises the relay's port, and measures it like kshim.
//
//	relay -listen 127.0.0.1:PORT -upstream 127.0.0.1:PORT -mode copy|splice
//
// copy: each direction reads into a 256 KB buffer (uvloop's read size) and writes what it read,
// the least a proxy that looks at the bytes does; splice: io.Copy between the two TCP connections,
// which Go does with splice(2), the bytes never entering user space.
package main

import (
	"flag"
	"io"
	"log"
	"net"
)

func pump(dst, src *net.TCPConn, mode string) {
	defer dst.CloseWrite()
	if mode == "splice" {
		io.Copy(dst, src)
		return
	}
	buf := make([]byte, 256<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func serve(client *net.TCPConn, upstream, mode string) {
	defer client.Close()
	conn, err := net.Dial("tcp", upstream)
	if err != nil {
		log.Printf("upstream %s: %v", upstream, err)
		return
	}
	up := conn.(*net.TCPConn)
	defer up.Close()
	done := make(chan struct{})
	go func() { pump(up, client, mode); close(done) }()
	pump(client, up, mode)
	<-done
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "", "address to forward to")
	mode := flag.String("mode", "copy", "copy or splice")
	flag.Parse()
	if *upstream == "" || (*mode != "copy" && *mode != "splice") {
		log.Fatal("usage: relay -listen ADDR -upstream ADDR -mode copy|splice")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("relay (%s) %s -> %s", *mode, ln.Addr(), *upstream)
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serve(c.(*net.TCPConn), *upstream, *mode)
	}
}
