"""The kernel half of nssim's uevent conformance cases.

Usage: uevent_probe.py host_event <before|after>:<init|net|user|user+net>
       uevent_probe.py tagged
       uevent_probe.py inject <small|empty|N> [UID]
       uevent_probe.py seqnum
       uevent_probe.py overrun <N>

Each prints one line that the model's answer is compared with. Sockets
are NETLINK_KOBJECT_UEVENT bound to group 1; injections are sent to the
kernel socket (pid 0) as one netlink message of type 16 with NLM_F_ACK,
and the kernel's answer is read from the ack. Receives time out after a
second; nothing here loops without bound.
"""
import ctypes, errno, os, socket, struct, sys
NETLINK_KOBJECT_UEVENT = 15
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
libc = ctypes.CDLL(None, use_errno=True)

def unshare(flags):
    if libc.unshare(flags) != 0:
        e = ctypes.get_errno()
        print("unshare:" + errno.errorcode[e]); sys.exit(0)

def listener(rcvbuf=None):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_KOBJECT_UEVENT)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((0, 1))
    s.settimeout(1.0)
    return s

def events(s, want):
    got = []
    while True:
        try:
            data = s.recv(65536)
        except socket.timeout:
            return got
        except OSError as e:
            got.append("ERR:" + errno.errorcode[e.errno]); continue
        if len(data) >= 16:
            ln, ty = struct.unpack_from("=IH", data)
            if ty == 2 and ln == len(data):
                got.append("ACK:" + (errno.errorcode[-struct.unpack_from("=i", data, 16)[0]] if struct.unpack_from("=i", data, 16)[0] else "ok"))
                continue
        fields = data.split(b"\0")
        if want is None or any(want.encode() in f for f in fields):
            seq = [f for f in fields if f.startswith(b"SEQNUM=")]
            got.append("EV:" + (seq[-1].decode()[7:] if seq else "-") + (":last" if fields[-2].startswith(b"SEQNUM=") else ":notlast"))

def host_event(setup):
    fd = os.open("/sys/devices/virtual/mem/full/uevent", os.O_WRONLY)
    flags = {"init": 0, "net": CLONE_NEWNET, "user": CLONE_NEWUSER, "user+net": CLONE_NEWUSER | CLONE_NEWNET}
    when, what = setup.split(":")
    if when == "before":
        if flags[what]: unshare(flags[what])
        s = listener()
    else:
        s = listener()
        unshare(flags[what])
    os.write(fd, b"add")
    evs = [e for e in events(s, "DEVPATH=/devices/virtual/mem/full") if e.startswith("EV:")]
    print("received" if evs else "none")

def tagged():
    """A listener in the host's network namespace, then a new network and
    mount namespace with its own sysfs and a listener there; "add" is
    written to the new namespace's lo, a network device (a tagged
    kobject)."""
    host = listener()
    unshare(CLONE_NEWNET | 0x00020000)
    MS_REC, MS_PRIVATE = 0x4000, 0x40000
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0 or \
            libc.mount(b"sysfs", b"/sys", b"sysfs", 0, None) != 0:
        print("mount:" + errno.errorcode[ctypes.get_errno()]); return
    own = listener()
    with open("/sys/class/net/lo/uevent", "w") as f:
        f.write("add")
    want = "DEVPATH=/devices/virtual/net/lo"
    mine = [e for e in events(own, want) if e.startswith("EV:")]
    theirs = [e for e in events(host, want) if e.startswith("EV:")]
    print("own=%s host=%s" % ("received" if mine else "none", "received" if theirs else "none"))

def drop_to(uid):
    """Become uid (and gid) without capabilities: a change of every uid
    away from 0 clears the capability sets."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)

def inject(payload_kind, uid=None):
    if uid is not None:
        drop_to(int(uid))
    s = listener()
    payload = {"small": b"add@/devices/nssim-probe\0ACTION=add\0DEVPATH=/devices/nssim-probe\0SUBSYSTEM=nssim\0",
               "empty": b""}.get(payload_kind)
    if payload is None:
        payload = b"x" * int(payload_kind)
    msg = struct.pack("=IHHII", 16 + len(payload), 16, 1 | 4, 1, 0) + payload
    s.sendto(msg, (0, 0))
    got = events(s, None)
    acks = [g[4:] for g in got if g.startswith("ACK:")]
    evs = [g for g in got if g.startswith("EV:")]
    print((acks[0] if acks else "noack") + " " + ("event" if evs else "noevent"))

def seqnum():
    s = listener()
    payload = b"add@/devices/nssim-probe\0ACTION=add\0"
    s.sendto(struct.pack("=IHHII", 16 + len(payload), 16, 1, 1, 0) + payload, (0, 0))
    after = int(open("/sys/kernel/uevent_seqnum").read())
    evs = [g for g in events(s, "nssim-probe") if g.startswith("EV:")]
    if not evs: print("noevent"); return
    n, pos = evs[0].split(":")[1:]
    print(("seqnum=current" if int(n) == after else "seqnum=%s current=%d" % (n, after)) + " " + pos)

def overrun(n):
    s = listener(rcvbuf=1)
    payload = b"add@/devices/nssim-probe\0ACTION=add\0"
    for _ in range(int(n)):
        s.sendto(struct.pack("=IHHII", 16 + len(payload), 16, 1, 1, 0) + payload, (0, 0))
    got = events(s, None)
    errs = [g for g in got if g.startswith("ERR:")]
    evs = [g for g in got if g.startswith("EV:")]
    first = got[0] if got else "nothing"
    print("first=" + ("ENOBUFS" if first == "ERR:ENOBUFS" else "event") + " enobufs=%d lost=%s" % (len(errs), "yes" if len(evs) < int(n) else "no"))

cmd = sys.argv[1]
{"host_event": lambda: host_event(sys.argv[2]), "inject": lambda: inject(*sys.argv[2:4]), "seqnum": seqnum, "tagged": tagged, "overrun": lambda: overrun(sys.argv[2])}[cmd]()
