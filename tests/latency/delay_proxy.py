#!/usr/bin/env python3
"""A TCP proxy in front of an HTTP object store (moto's S3 server) that adds a round-trip time
to every request, for engines that are not lancet (pylance) and lancet alike: the same
latency on the wire for both. Standard library only.

Each chunk a client sends is forwarded `delay` after it arrived (a delay line: order kept,
chunks of one request not delayed one after another), so every request costs one extra
round trip of `delay`; responses pass at once. New connections cost nothing extra (S3's TCP
and TLS handshakes are not modelled).

It also accounts what it carries, as lancet's latency store does (`lancet_paths::latency`):
requests (an HTTP request line starting a client chunk on a connection whose previous
request has been answered), bytes each way, and the longest chain: a request depends on every
request whose answer had begun before it started.

    delay_proxy.py --target HOST:PORT --delay-ms 50 --port-file FILE [--control-port-file FILE]

writes the port it listens on to --port-file once it is ready. The control port answers a
line `stats` with the counters as one JSON line, and `reset` by zeroing them.
Also importable: `DelayProxy(target, delay_s).start()` runs it on a thread of the caller.
"""

import argparse
import asyncio
import json
import os
import threading
import time

METHODS = (b"GET ", b"PUT ", b"HEAD ", b"POST ", b"DELETE ", b"PATCH ", b"OPTIONS ")


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        # a reset starts a new epoch: answers to requests counted before it are not counted
        self.epoch = 0
        self.reset()

    def reset(self):
        with self.lock:
            self.epoch += 1
            self.requests = 0
            self.bytes_up = 0
            self.bytes_down = 0
            self.longest_chain = 0
            self.answered_depth = 0

    def start(self):
        """A request starts: (its epoch, its depth)."""
        with self.lock:
            self.requests += 1
            depth = self.answered_depth + 1
            self.longest_chain = max(self.longest_chain, depth)
            return self.epoch, depth

    def answered(self, started):
        epoch, depth = started
        with self.lock:
            if epoch == self.epoch:
                self.answered_depth = max(self.answered_depth, depth)

    def snapshot(self):
        with self.lock:
            return {
                "requests": self.requests,
                "bytes_up": self.bytes_up,
                "bytes_down": self.bytes_down,
                "longest_chain": self.longest_chain,
            }


class DelayProxy:
    def __init__(self, target, delay_s, port=0):
        host, _, target_port = target.rpartition(":")
        self.target = (host or "127.0.0.1", int(target_port))
        self.delay = delay_s
        self.port = port
        self.counters = Counters()
        self.loop = None

    async def _pump_up(self, reader, writer, conn):
        """Client to server through the delay line."""
        queue = asyncio.Queue()

        async def line():
            while True:
                due, data = await queue.get()
                if data is None:
                    break
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            writer.close()

        sender = asyncio.ensure_future(line())
        try:
            while not sender.done():
                data = await reader.read(65536)
                if not data:
                    break
                with self.counters.lock:
                    self.counters.bytes_up += len(data)
                if conn["idle"] and data.startswith(METHODS):
                    conn["idle"] = False
                    conn["depth"] = self.counters.start()
                await queue.put((time.monotonic() + self.delay, data))
        except ConnectionError:
            pass
        await queue.put((0, None))
        try:
            await sender
        except ConnectionError:
            pass

    async def _pump_down(self, reader, writer, conn):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                with self.counters.lock:
                    self.counters.bytes_down += len(data)
                if not conn["idle"]:
                    conn["idle"] = True
                    self.counters.answered(conn["depth"])
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        writer.close()

    async def _serve(self, client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.close()
            return
        conn = {"idle": True, "depth": (0, 0)}
        await asyncio.gather(
            self._pump_up(client_reader, server_writer, conn),
            self._pump_down(server_reader, client_writer, conn),
        )

    async def _control(self, reader, writer):
        line = (await reader.readline()).strip()
        if line == b"reset":
            self.counters.reset()
            writer.write(b"{}\n")
        else:
            writer.write(json.dumps(self.counters.snapshot()).encode() + b"\n")
        await writer.drain()
        writer.close()

    async def _main(self, ready, control_port):
        server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = server.sockets[0].getsockname()[1]
        control = await asyncio.start_server(self._control, "127.0.0.1", control_port)
        self.control_port = control.sockets[0].getsockname()[1]
        ready()
        async with server, control:
            await asyncio.gather(server.serve_forever(), control.serve_forever())

    def start(self):
        """Runs on a daemon thread; returns once listening."""
        started = threading.Event()

        def run():
            self.loop = asyncio.new_event_loop()
            self.loop.run_until_complete(self._main(started.set, 0))

        threading.Thread(target=run, daemon=True).start()
        if not started.wait(30):
            raise RuntimeError("the delay proxy did not start")
        return self

    def stats(self):
        return self.counters.snapshot()

    def reset(self):
        self.counters.reset()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--delay-ms", type=float, required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--control-port-file")
    args = ap.parse_args()
    proxy = DelayProxy(args.target, args.delay_ms / 1000.0)

    def ready():
        if args.control_port_file:
            with open(args.control_port_file + ".tmp", "w") as f:
                f.write(str(proxy.control_port))
            os.replace(args.control_port_file + ".tmp", args.control_port_file)
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(proxy.port))
        os.replace(args.port_file + ".tmp", args.port_file)

    asyncio.run(proxy._main(ready, 0))


if __name__ == "__main__":
    main()
