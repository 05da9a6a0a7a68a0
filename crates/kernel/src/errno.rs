//! Error numbers, printed the way the kernel names them.

use std::fmt;

/// Declares the error numbers once: the enum, the names the kernel gives
/// them, and the list of every one.
macro_rules! declare_errnos {
    ($($name:ident = $number:literal,)*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[allow(clippy::upper_case_acronyms)]
        pub enum Errno {
            $($name = $number,)*
        }

        impl Errno {
            pub fn name(self) -> &'static str {
                match self {
                    $(Errno::$name => stringify!($name),)*
                }
            }

            /// Every error number the model returns.
            pub const ALL: &[Errno] = &[$(Errno::$name,)*];
        }
    };
}

declare_errnos! {
    EPERM = 1,
    ENOENT = 2,
    ESRCH = 3,
    E2BIG = 7,
    EBADF = 9,
    ECHILD = 10,
    EAGAIN = 11,
    ENOMEM = 12,
    EACCES = 13,
    EEXIST = 17,
    EINVAL = 22,
    EMFILE = 24,
    EFBIG = 27,
    ENOSPC = 28,
    ERANGE = 34,
    ENOMSG = 42,
    EIDRM = 43,
    EOVERFLOW = 75,
    EUSERS = 87,
    ENOBUFS = 105,
    ECONNREFUSED = 111,
}

impl Errno {
    /// The value a syscall returns: minus the error number.
    pub fn as_return(self) -> i64 {
        -(self as i64)
    }

    pub fn from_return(v: i64) -> Option<Errno> {
        Self::ALL.iter().copied().find(|e| e.as_return() == v)
    }

    /// `"EPERM"` → `Errno::EPERM`.
    pub fn from_name(name: &str) -> Option<Errno> {
        Self::ALL.iter().copied().find(|e| e.name() == name)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The errno of a user-namespace path.
pub fn from_userns(e: userns::Error) -> Errno {
    match e {
        userns::Error::EPERM => Errno::EPERM,
        userns::Error::EINVAL => Errno::EINVAL,
        userns::Error::ENOSPC => Errno::ENOSPC,
        userns::Error::EUSERS => Errno::EUSERS,
        userns::Error::ENOMEM => Errno::ENOMEM,
        userns::Error::EACCES => Errno::EACCES,
    }
}
