//! NETLINK_KOBJECT_UEVENT sockets: a listener bound to the kernel's
//! multicast group 1, receiving without waiting, and injection into the
//! kernel socket (portid 0) of the caller's network namespace
//! (`uevent_net_rcv_skb`, lib/kobject_uevent.c).

use crate::sys::{self, SysResult};

const NETLINK_KOBJECT_UEVENT: libc::c_int = 15;

fn socket() -> SysResult<i32> {
    let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, NETLINK_KOBJECT_UEVENT) };
    if fd < 0 {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    } else {
        Ok(fd)
    }
}

fn address(groups: u32) -> libc::sockaddr_nl {
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    addr.nl_groups = groups;
    addr
}

/// A listener with a receive buffer of `rcvbuf` bytes: SO_RCVBUF asks for
/// half of it, since the kernel doubles what it is asked for. The socket
/// stays open across execve, as the model's does.
pub fn listen(rcvbuf: u64) -> SysResult<i32> {
    let fd = socket()?;
    let half: libc::c_int = (rcvbuf / 2).min(i32::MAX as u64) as libc::c_int;
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&half as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        let e = sys::errno();
        sys::close(fd);
        return Err(e);
    }
    let addr = address(1);
    let r = unsafe {
        libc::bind(
            fd,
            (&addr as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if r < 0 {
        let e = sys::errno();
        sys::close(fd);
        return Err(e);
    }
    Ok(fd)
}

/// Receive one uevent without waiting: its SEQNUM when it carries one.
/// One uevent received (waiting for one when `wait`): its SEQNUM and its
/// ACTION (the word of its header before the `@`).
pub fn recv(fd: i32, wait: bool) -> SysResult<(Option<u64>, Option<String>)> {
    let mut buf = vec![0u8; 8192];
    let flags = if wait { 0 } else { libc::MSG_DONTWAIT };
    let n = loop {
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
        if n >= 0 || sys::errno() != libc::EINTR {
            break n;
        }
    };
    if n < 0 {
        return Err(sys::errno());
    }
    buf.truncate(n as usize);
    Ok((seqnum_of(&buf), action_of(&buf)))
}

/// The ACTION of a uevent: its `ACTION@DEVPATH` header's first word.
pub fn action_of(message: &[u8]) -> Option<String> {
    let header = message.split(|b| *b == 0 || *b == b'\n').next()?;
    let action = header.split(|b| *b == b'@').next()?;
    String::from_utf8(action.to_vec()).ok()
}

/// `SEQNUM=` of a uevent's NUL-separated fields.
pub fn seqnum_of(message: &[u8]) -> Option<u64> {
    message
        .split(|b| *b == 0)
        .filter_map(|f| f.strip_prefix(b"SEQNUM="))
        .find_map(|v| std::str::from_utf8(v).ok()?.parse().ok())
}

/// Send `payload` to the kernel uevent socket of the caller's network
/// namespace, from a socket of its own (so that the caller's listener,
/// if any, receives the broadcast as in the model), as one netlink
/// request asking for an ack: the kernel's answer is the ack's error
/// (`uevent_net_rcv_skb` refuses a sender without CAP_SYS_ADMIN over the
/// namespace's owner with EPERM).
pub fn inject(payload: &str) -> SysResult<()> {
    let fd = socket()?;
    let result = send_and_ack(fd, payload);
    sys::close(fd);
    result
}

const NLMSG_HDRLEN: usize = 16;
const NLMSG_MIN_TYPE: u16 = 0x10;
const NLMSG_ERROR: u16 = 0x2;

fn request(payload: &str) -> Vec<u8> {
    let body_len = payload.len() + 1;
    let len = NLMSG_HDRLEN + body_len;
    let mut msg = Vec::with_capacity(len.next_multiple_of(4));
    msg.extend_from_slice(&(len as u32).to_ne_bytes());
    msg.extend_from_slice(&NLMSG_MIN_TYPE.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16;
    msg.extend_from_slice(&flags.to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(payload.as_bytes());
    msg.push(0);
    msg
}

fn send_and_ack(fd: i32, payload: &str) -> SysResult<()> {
    let timeout = libc::timeval {
        tv_sec: 2,
        tv_usec: 0,
    };
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
    let kernel = address(0);
    let msg = request(payload);
    let r = unsafe {
        libc::sendto(
            fd,
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(sys::errno());
    }
    let mut ack = [0u8; 256];
    let n = unsafe { libc::recv(fd, ack.as_mut_ptr().cast(), ack.len(), 0) };
    if n < 0 {
        return Err(sys::errno());
    }
    ack_error(&ack[..n as usize])
}

/// The error of a netlink ack: 0 (ok) or minus an errno.
fn ack_error(ack: &[u8]) -> SysResult<()> {
    if ack.len() < NLMSG_HDRLEN + 4 {
        return Err(libc::EIO);
    }
    let kind = u16::from_ne_bytes([ack[4], ack[5]]);
    if kind != NLMSG_ERROR {
        return Err(libc::EIO);
    }
    let error = i32::from_ne_bytes([ack[16], ack[17], ack[18], ack[19]]);
    if error == 0 {
        Ok(())
    } else {
        Err(-error)
    }
}

/// A tagged uevent for a network device of the caller's namespace: its
/// loopback device (ifindex 1 in every network namespace, down in a new
/// one) is renamed, which sends a `move` uevent tagged with the namespace
/// (`device_rename`), as the model's `uevent_netdev_event` sends one.
///
/// SIOCSIFNAME finds the device by its current name, so reading the name
/// and renaming is a compare-and-swap: when another task of the namespace
/// renamed the device in between, the rename finds no device of the old
/// name (ENODEV) and sent nothing, and it is tried again with the new name.
/// The model's op has no such window (it is one rename), so the executor
/// must not show one either.
pub fn rename_loopback() -> SysResult<()> {
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(sys::errno());
    }
    let mut result = Err(libc::ENODEV);
    for _ in 0..RENAME_ATTEMPTS {
        result = rename_loopback_once(fd);
        if result != Err(libc::ENODEV) {
            break;
        }
    }
    sys::close(fd);
    result
}

/// How often a rename that lost the race to another is tried again.
const RENAME_ATTEMPTS: usize = 1000;

fn rename_loopback_once(fd: i32) -> SysResult<()> {
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    req.ifr_ifru.ifru_ifindex = 1;
    if unsafe { libc::ioctl(fd, libc::SIOCGIFNAME, &mut req) } < 0 {
        return Err(sys::errno());
    }
    // A name other than the current one: a rename to the same name
    // sends no uevent.
    let current: Vec<u8> = req
        .ifr_name
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    let name: &[u8] = if current == b"nssim0" {
        b"nssim1"
    } else {
        b"nssim0"
    };
    let mut new: [libc::c_char; libc::IFNAMSIZ] = [0; libc::IFNAMSIZ];
    for (d, b) in new.iter_mut().zip(name) {
        *d = *b as libc::c_char;
    }
    req.ifr_ifru.ifru_newname = new;
    if unsafe { libc::ioctl(fd, libc::SIOCSIFNAME, &mut req) } < 0 {
        return Err(sys::errno());
    }
    Ok(())
}

/// How many uevent listeners (NETLINK_KOBJECT_UEVENT sockets bound to a
/// group) the machine has in network namespaces other than the run's: an
/// untagged uevent would reach them.
pub fn machine_listeners() -> usize {
    let mut seen = std::collections::BTreeSet::new();
    let mut listeners = 0;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    for entry in dir.flatten() {
        let Ok(ns) = std::fs::read_link(entry.path().join("ns/net")) else {
            continue;
        };
        if !seen.insert(ns) {
            continue;
        }
        let table = std::fs::read_to_string(entry.path().join("net/netlink")).unwrap_or_default();
        listeners += table
            .lines()
            .skip(1)
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3 && f[1] == "15" && u32::from_str_radix(f[3], 16).unwrap_or(0) != 0
            })
            .count();
    }
    listeners
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ack_carries_minus_the_errno() {
        let mut ack = vec![0u8; 36];
        ack[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        assert_eq!(ack_error(&ack), Ok(()));
        ack[16..20].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
        assert_eq!(ack_error(&ack), Err(libc::EPERM));
        assert_eq!(ack_error(&ack[..10]), Err(libc::EIO));
    }

    #[test]
    fn a_request_is_a_header_and_the_payload() {
        let msg = request("add@/x");
        assert_eq!(
            u32::from_ne_bytes([msg[0], msg[1], msg[2], msg[3]]) as usize,
            msg.len()
        );
        assert_eq!(&msg[NLMSG_HDRLEN..], b"add@/x\0");
    }

    #[test]
    fn the_seqnum_field_is_found_among_the_fields() {
        let msg = b"add@/devices/x\0ACTION=add\0SEQNUM=42\0";
        assert_eq!(seqnum_of(msg), Some(42));
        assert_eq!(seqnum_of(b"add@/devices/x\0ACTION=add\0"), None);
    }
}
