//! The system-call filter of every sandboxed command (both mechanisms).
//!
//! A sandboxed command has no business changing the mount table, entering or
//! creating namespaces, tracing or reading other processes' memory, loading
//! kernel code or using the kernel keyring, whoever runs dandori. The filter
//! answers those calls with `EPERM` (so tools that probe them fail cleanly) and
//! `clone3` with `ENOSYS` (its flags live in memory a filter cannot read; the C
//! libraries then fall back to `clone`, whose flags are checked: a new namespace
//! is refused). System calls of another ABI than the native one (i386 and x32
//! on x86_64) are refused: the numbers below would not cover them.
//!
//! The program is plain classic BPF: [`program`] builds it, [`to_bytes`] gives
//! bubblewrap's `--seccomp FD` format, and the built-in sandbox installs it with
//! [`apply`] just before its command starts.

/// `AUDIT_ARCH_X86_64` / `AUDIT_ARCH_AARCH64` (linux/audit.h).
#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xC000_00B7;

/// x32 system calls on x86_64 carry this bit in their number.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

// Classic BPF opcodes (linux/filter.h).
const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD (0x00) | BPF_W (0x00) | BPF_ABS (0x20)
const BPF_JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JGE_K: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
const BPF_JSET_K: u16 = 0x05 | 0x40; // BPF_JMP | BPF_JSET | BPF_K
const BPF_RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

// Offsets in `struct seccomp_data`.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
/// The low 32 bits of `args[0]` (little-endian targets).
const OFF_ARG0_LO: u32 = 16;

/// `CLONE_NEW*` flags: a `clone` that sets any of them is refused.
const CLONE_NAMESPACE_FLAGS: u32 = 0x0002_0000 // CLONE_NEWNS
    | 0x0200_0000 // CLONE_NEWCGROUP
    | 0x0400_0000 // CLONE_NEWUTS
    | 0x0800_0000 // CLONE_NEWIPC
    | 0x1000_0000 // CLONE_NEWUSER
    | 0x2000_0000 // CLONE_NEWPID
    | 0x4000_0000 // CLONE_NEWNET
    | 0x0000_0080; // CLONE_NEWTIME

/// The refused system calls, by name (for the documentation and the tests) and
/// number on this architecture.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn denied() -> Vec<(&'static str, i64)> {
    use libc::*;
    let mut v: Vec<(&'static str, i64)> = vec![
        ("mount", SYS_mount),
        ("umount2", SYS_umount2),
        ("pivot_root", SYS_pivot_root),
        ("chroot", SYS_chroot),
        ("open_tree", SYS_open_tree),
        ("move_mount", SYS_move_mount),
        ("fsopen", SYS_fsopen),
        ("fsconfig", SYS_fsconfig),
        ("fsmount", SYS_fsmount),
        ("fspick", SYS_fspick),
        ("mount_setattr", SYS_mount_setattr),
        ("setns", SYS_setns),
        ("unshare", SYS_unshare),
        ("ptrace", SYS_ptrace),
        ("process_vm_readv", SYS_process_vm_readv),
        ("process_vm_writev", SYS_process_vm_writev),
        ("kcmp", SYS_kcmp),
        ("pidfd_getfd", SYS_pidfd_getfd),
        ("keyctl", SYS_keyctl),
        ("add_key", SYS_add_key),
        ("request_key", SYS_request_key),
        ("bpf", SYS_bpf),
        ("perf_event_open", SYS_perf_event_open),
        ("kexec_load", SYS_kexec_load),
        ("kexec_file_load", SYS_kexec_file_load),
        ("init_module", SYS_init_module),
        ("finit_module", SYS_finit_module),
        ("delete_module", SYS_delete_module),
        ("open_by_handle_at", SYS_open_by_handle_at),
        ("name_to_handle_at", SYS_name_to_handle_at),
        ("swapon", SYS_swapon),
        ("swapoff", SYS_swapoff),
        ("reboot", SYS_reboot),
        ("syslog", SYS_syslog),
        ("acct", SYS_acct),
        ("quotactl", SYS_quotactl),
        ("settimeofday", SYS_settimeofday),
        ("clock_settime", SYS_clock_settime),
        ("clock_adjtime", SYS_clock_adjtime),
        ("adjtimex", SYS_adjtimex),
        ("userfaultfd", SYS_userfaultfd),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        ("iopl", SYS_iopl),
        ("ioperm", SYS_ioperm),
        ("uselib", SYS_uselib),
    ]);
    v
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn denied() -> Vec<(&'static str, i64)> {
    Vec::new()
}

/// One instruction, in the kernel's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

fn stmt(code: u16, k: u32) -> Insn {
    Insn {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn { code, jt, jf, k }
}

/// The filter program. `None` on an architecture the filter does not know
/// (the sandbox then says so instead of pretending).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn program() -> Option<Vec<Insn>> {
    let eperm = RET_ERRNO | libc::EPERM as u32;
    let enosys = RET_ERRNO | libc::ENOSYS as u32;
    let mut p = vec![
        stmt(BPF_LD_W_ABS, OFF_ARCH),
        // Native ABI: skip the refusal below.
        jump(BPF_JEQ_K, NATIVE_ARCH, 1, 0),
        stmt(BPF_RET_K, eperm),
        stmt(BPF_LD_W_ABS, OFF_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    {
        p.push(jump(BPF_JGE_K, X32_SYSCALL_BIT, 0, 1));
        p.push(stmt(BPF_RET_K, eperm));
    }
    for (_, nr) in denied() {
        p.push(jump(BPF_JEQ_K, nr as u32, 0, 1));
        p.push(stmt(BPF_RET_K, eperm));
    }
    p.push(jump(BPF_JEQ_K, libc::SYS_clone3 as u32, 0, 1));
    p.push(stmt(BPF_RET_K, enosys));
    // clone: refuse namespace flags (args[0] is the flags on both targets).
    p.push(jump(BPF_JEQ_K, libc::SYS_clone as u32, 0, 3));
    p.push(stmt(BPF_LD_W_ABS, OFF_ARG0_LO));
    p.push(jump(BPF_JSET_K, CLONE_NAMESPACE_FLAGS, 0, 1));
    p.push(stmt(BPF_RET_K, eperm));
    p.push(stmt(BPF_RET_K, RET_ALLOW));
    Some(p)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn program() -> Option<Vec<Insn>> {
    None
}

/// The program as bubblewrap reads it from `--seccomp FD`: the instructions in
/// native byte order, 8 bytes each.
pub fn to_bytes(p: &[Insn]) -> Vec<u8> {
    let mut out = Vec::with_capacity(p.len() * 8);
    for i in p {
        out.extend_from_slice(&i.code.to_ne_bytes());
        out.push(i.jt);
        out.push(i.jf);
        out.extend_from_slice(&i.k.to_ne_bytes());
    }
    out
}

/// Installs the filter on the calling thread (inherited by every child). The
/// caller has set `no_new_privs` (the kernel requires it without privilege).
#[cfg(target_os = "linux")]
pub fn apply() -> Result<(), String> {
    let Some(p) = program() else {
        return Err("no system-call filter for this architecture".to_string());
    };
    let prog: Vec<seccompiler::sock_filter> = p
        .iter()
        .map(|i| seccompiler::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect();
    seccompiler::apply_filter(&prog).map_err(|e| format!("seccomp: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_stay_inside_the_program() {
        let p = program().unwrap_or_default();
        for (i, insn) in p.iter().enumerate() {
            if insn.code & 0x07 == 0x05 {
                assert!(i + 1 + (insn.jt as usize) < p.len(), "jt of {i}");
                assert!(i + 1 + (insn.jf as usize) < p.len(), "jf of {i}");
            }
        }
        assert_eq!(to_bytes(&p).len(), p.len() * 8);
    }
}
