//! A child process confined: its own process group, a memory limit, death with fluxmend
//! (Linux), and a network namespace of its own when one can be made (Linux); elsewhere it says
//! what it could not do.

use std::io;
use std::process::{Child, Command};

/// How well a confined child is kept from the network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Network {
    /// It runs in a network namespace of its own: no interface but a loopback that is down.
    Isolated,
    /// No namespace could be made: why.
    Reachable(String),
}

/// A child started by [`spawn_confined`].
pub struct Confined {
    pub child: Child,
    pub network: Network,
}

impl Confined {
    /// Kill the child and everything it started (its process group, where there are groups).
    pub fn kill_all(&mut self) {
        #[cfg(unix)]
        {
            let group = self.child.id() as libc::pid_t;
            // SAFETY: signalling the child's own process group.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        #[cfg(not(unix))]
        {
            let _ = self.child.kill();
        }
    }
}

/// Start `command` confined: in a process group of its own with at most `memory_bytes` of data
/// (`RLIMIT_DATA`), killed when fluxmend dies (Linux), and in a network namespace of its own
/// when one can be made (Linux: directly, or inside a user namespace when unprivileged).
pub fn spawn_confined(mut command: Command, memory_bytes: u64) -> io::Result<Confined> {
    #[cfg(target_os = "linux")]
    {
        let (read, write) = linux::report_pipe()?;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt as _;
            command.pre_exec(move || {
                unix::own_group_and_memory(memory_bytes)?;
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                linux::enter_network_namespace(write);
                Ok(())
            });
        }
        let spawned = command.spawn();
        // SAFETY: our own end; the child's copy closed at its exec.
        unsafe { libc::close(write) };
        let network = linux::read_report(read);
        Ok(Confined {
            child: spawned?,
            network,
        })
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt as _;
            command.pre_exec(move || unix::own_group_and_memory(memory_bytes));
        }
        Ok(Confined {
            child: command.spawn()?,
            network: Network::Reachable("network namespaces exist only on Linux".into()),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = memory_bytes;
        Ok(Confined {
            child: command.spawn()?,
            network: Network::Reachable(
                "network namespaces exist only on Linux (and no memory limit could be set)".into(),
            ),
        })
    }
}

#[cfg(unix)]
mod unix {
    use std::io;

    pub fn own_group_and_memory(memory_bytes: u64) -> io::Result<()> {
        // SAFETY: plain system calls on this (child) process.
        unsafe {
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            let limit = libc::rlimit {
                rlim_cur: memory_bytes as libc::rlim_t,
                rlim_max: memory_bytes as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &raw const limit) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::Network;

    /// A pipe (both ends close on exec) on which the child reports whether it entered a
    /// network namespace: `n`, or `e` and the errno.
    pub fn report_pipe() -> std::io::Result<(libc::c_int, libc::c_int)> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: a valid array of two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((fds[0], fds[1]))
    }

    /// In the child, before exec: a new network namespace (privileged), else a user namespace
    /// with one (unprivileged); the outcome written to `report`. Never fails the spawn.
    pub fn enter_network_namespace(report: libc::c_int) {
        // SAFETY: plain system calls in the forked child; `report` is its copy of the pipe.
        unsafe {
            let mut outcome = [b'n', 0, 0, 0, 0];
            if libc::unshare(libc::CLONE_NEWNET) != 0
                && libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0
            {
                outcome[0] = b'e';
                let errno = *libc::__errno_location();
                outcome[1..].copy_from_slice(&errno.to_ne_bytes());
            }
            libc::write(report, outcome.as_ptr().cast(), outcome.len());
        }
    }

    /// What the child reported (then the read end is closed).
    pub fn read_report(read: libc::c_int) -> Network {
        let mut buf = [0u8; 5];
        // SAFETY: reading into a local buffer from our own descriptor, then closing it.
        let n = unsafe {
            let n = libc::read(read, buf.as_mut_ptr().cast(), buf.len());
            libc::close(read);
            n
        };
        match (n, buf[0]) {
            (5, b'n') => Network::Isolated,
            (5, b'e') => {
                let errno = i32::from_ne_bytes([buf[1], buf[2], buf[3], buf[4]]);
                Network::Reachable(format!(
                    "no network namespace could be made here ({})",
                    std::io::Error::from_raw_os_error(errno)
                ))
            }
            _ => Network::Reachable("the build did not start".into()),
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// What the child reports through the pipe becomes what the gate says: isolated, or the
    /// reason it is not (the fallback where no namespace can be made).
    #[test]
    fn the_childs_report_says_whether_it_is_isolated() {
        let report = |bytes: &[u8]| {
            let (read, write) = linux::report_pipe().unwrap();
            // SAFETY: writing a local buffer to our own pipe, then closing that end.
            unsafe {
                libc::write(write, bytes.as_ptr().cast(), bytes.len());
                libc::close(write);
            }
            linux::read_report(read)
        };
        assert_eq!(report(b"n\0\0\0\0"), Network::Isolated);
        let mut denied = vec![b'e'];
        denied.extend(libc::EPERM.to_ne_bytes());
        match report(&denied) {
            Network::Reachable(why) => {
                assert!(
                    why.starts_with("no network namespace could be made here ("),
                    "{why}"
                );
            }
            Network::Isolated => panic!("reported isolated"),
        }
        assert!(matches!(report(b""), Network::Reachable(_)));
    }

    /// A confined child that reports isolation really is in another network namespace.
    #[test]
    fn an_isolated_child_has_a_network_namespace_of_its_own() {
        let mut command = Command::new("/usr/bin/readlink");
        command
            .arg("/proc/self/ns/net")
            .stdout(std::process::Stdio::piped());
        let confined = spawn_confined(command, 1 << 30).unwrap();
        let network = confined.network.clone();
        let out = confined.child.wait_with_output().unwrap();
        let theirs = String::from_utf8(out.stdout).unwrap();
        let ours = std::fs::read_link("/proc/self/ns/net").unwrap();
        match network {
            Network::Isolated => assert_ne!(theirs.trim(), ours.to_str().unwrap()),
            Network::Reachable(_) => assert_eq!(theirs.trim(), ours.to_str().unwrap()),
        }
    }
}
