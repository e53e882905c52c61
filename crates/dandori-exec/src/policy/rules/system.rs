//! Programs and places that belong to the machine, not the project: privilege
//! escalation, network and system configuration tools, protected system paths
//! and credential stores named in any word.
//!
//! Hostile lines: classes `privilege`, `system_dirs` and `secret_read` of
//! `tests/fixtures/policy/hostile.txt`.

use super::*;

pub(crate) const PRIVILEGE: &[&str] = &[
    "sudo",
    "su",
    "doas",
    "pkexec",
    "runuser",
    "chroot",
    "setpriv",
    "gosu",
    "su-exec",
    "sg",
    "newgrp",
    "machinectl",
    "nsenter",
    "unshare",
    "capsh",
    "setcap",
];

pub(crate) const NETWORK: &[&str] = &[
    "ip",
    "ifconfig",
    "iptables",
    "ip6tables",
    "iptables-restore",
    "ip6tables-restore",
    "iptables-save",
    "nft",
    "route",
    "nmcli",
    "nmtui",
    "netplan",
    "ufw",
    "firewall-cmd",
    "tc",
    "ethtool",
    "iw",
    "iwconfig",
    "resolvectl",
    "systemd-resolve",
    "hostnamectl",
    "brctl",
    "dhclient",
    "arp",
    "ebtables",
    "wg",
    "wg-quick",
];

pub(crate) const SYSTEM: &[&str] = &[
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "init",
    "telinit",
    "systemctl",
    "service",
    "mount",
    "umount",
    "fdisk",
    "sfdisk",
    "parted",
    "wipefs",
    "mkswap",
    "swapon",
    "swapoff",
    "modprobe",
    "insmod",
    "rmmod",
    "sysctl",
    "useradd",
    "userdel",
    "usermod",
    "groupadd",
    "passwd",
    "chpasswd",
    "visudo",
    "loginctl",
    "kill",
    "pkill",
    "killall",
    "dd",
    "shred",
    "apt",
    "apt-get",
    "dpkg",
    "yum",
    "dnf",
    "apk",
    "pacman",
    "zypper",
    "snap",
];

pub(crate) const PROTECTED_PREFIXES: &[&str] = &[
    "/etc",
    "/sys",
    "/proc/sys",
    "/proc/sysrq-trigger",
    "/proc/kcore",
    "/boot",
    "/root",
    "/lib/modules",
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/var/lib/dpkg",
    "/var/lib/apt",
];

pub(crate) const CREDENTIAL_PARTS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".docker/config.json",
    ".kube/config",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    "id_rsa",
    "id_ed25519",
];

/// Checks a word that may name a path (also the value of `--opt=value`).
pub(crate) fn check_path_like(word: &str) -> Result<(), PolicyViolation> {
    let mut candidates = vec![word];
    if let Some((_, v)) = word.split_once('=') {
        candidates.push(v);
    }
    for c in candidates {
        for cred in CREDENTIAL_PARTS {
            let hit = c
                .split('/')
                .collect::<Vec<_>>()
                .windows(cred.matches('/').count() + 1)
                .any(|w| w.join("/") == *cred);
            if hit {
                return Err(PolicyViolation::new(
                    codes::POLICY_CREDENTIAL_ACCESS,
                    format!("`{c}` points into a credential store"),
                ));
            }
        }
        let abs = if c.starts_with('/') {
            Some(normalize_abs(c))
        } else if c.starts_with("..") && c.matches("..").count() >= 2 {
            // `../../../etc/passwd`: climbing out of the project into a system dir.
            let rest: Vec<&str> = c
                .split('/')
                .skip_while(|s| *s == ".." || *s == "." || s.is_empty())
                .collect();
            (!rest.is_empty()).then(|| format!("/{}", rest.join("/")))
        } else {
            None
        };
        let Some(abs) = abs else { continue };
        if SAFE_DEVICES.iter().any(|d| under(&abs, d)) {
            continue;
        }
        if PROTECTED_PREFIXES.iter().any(|p| under(&abs, p)) || under(&abs, "/dev") {
            return Err(PolicyViolation::new(
                codes::POLICY_SYSTEM_PATH,
                format!("`{c}` is a protected system location"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::class_test;
    use crate::policy::codes::*;

    #[test]
    fn hostile_refused_legitimate_allowed() {
        class_test::check(
            &[
                ("doas -u root make install", POLICY_PRIVILEGE_ESCALATION),
                ("nsenter -t 1 -m sh", POLICY_PRIVILEGE_ESCALATION),
                ("iptables -P INPUT ACCEPT", POLICY_NETWORK_CONFIG),
                ("systemctl restart docker", POLICY_SYSTEM_CONTROL),
                ("cat ../../../../../etc/shadow", POLICY_SYSTEM_PATH),
                ("tar czf out.tgz ~/.aws", POLICY_CREDENTIAL_ACCESS),
            ],
            &["cat /proc/cpuinfo", "ls /usr/include", "grep -r TODO src"],
        );
    }
}
