"""The seccomp filter bubblewrap installs before student code runs: a classic-BPF program, built here.

It refuses (EPERM) the system calls that reshape the sandbox or reach into the kernel: mounts,
namespaces, ptrace (and pidfd_getfd, which takes another process's descriptors), keyrings, BPF, module
loading, io_uring and the like, and `clone` with any
namespace flag. `clone3` answers ENOSYS so that the C library falls back to plain `clone`, whose
flags the filter can read. A call from another ABI (32-bit x86, x32) is refused outright.
Numbers come from the kernel's unistd tables for each architecture (asm/unistd_64.h, asm-generic).
"""
from __future__ import annotations

import errno
import platform
import struct

# name: (x86_64, aarch64), from asm/unistd_64.h and asm-generic/unistd.h
NUMBERS = {
    "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "chroot": (161, 51),
    "unshare": (272, 97), "setns": (308, 268), "ptrace": (101, 117), "keyctl": (250, 219),
    "add_key": (248, 217), "request_key": (249, 218), "bpf": (321, 280), "perf_event_open": (298, 241),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294), "init_module": (175, 105),
    "finit_module": (313, 273), "delete_module": (176, 106), "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264), "userfaultfd": (323, 282), "swapon": (167, 224), "swapoff": (168, 225),
    "reboot": (169, 142), "syslog": (103, 116), "acct": (163, 89), "quotactl": (179, 60),
    "quotactl_fd": (443, 443), "settimeofday": (164, 170), "clock_settime": (227, 112), "adjtimex": (159, 171),
    "clock_adjtime": (305, 266), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "kcmp": (312, 272), "io_uring_setup": (425, 425), "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427), "fsopen": (430, 430), "fsconfig": (431, 431), "fsmount": (432, 432),
    "fspick": (433, 433), "move_mount": (429, 429), "open_tree": (428, 428), "mount_setattr": (442, 442),
    "sethostname": (170, 161), "setdomainname": (171, 162), "fanotify_init": (300, 262), "vhangup": (153, 58),
    "lookup_dcookie": (212, 18), "pidfd_getfd": (438, 438), "clone": (56, 220), "clone3": (435, 435),
}
MACHINES = ("x86_64", "aarch64")
DENIED = tuple(name for name in NUMBERS if not name.startswith("clone"))   # clone is filtered by its flags
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000

# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 \
    | 0x40000000 | 0x00000080

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW, RET_KILL_PROCESS, RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0 = 0, 4, 16


class UnsupportedArchitecture(RuntimeError):
    pass


def _instruction(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(machine: str | None = None) -> bytes:
    """The filter for this machine's architecture, as the bytes `bwrap --seccomp FD` reads."""
    machine = machine or platform.machine()
    if machine not in MACHINES:
        raise UnsupportedArchitecture(f"no seccomp table for {machine}; supported: {', '.join(MACHINES)}")
    numbers = {name: pair[MACHINES.index(machine)] for name, pair in NUMBERS.items()}
    deny, enosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    program = [_instruction(LD_W_ABS, OFFSET_ARCH),
               _instruction(JEQ_K, AUDIT_ARCH[machine], jt=1),
               _instruction(RET_K, RET_KILL_PROCESS),
               _instruction(LD_W_ABS, OFFSET_NR)]
    if machine == "x86_64":            # x32 calls carry this bit and would bypass every number below
        program += [_instruction(JGE_K, X32_SYSCALL_BIT, jf=1), _instruction(RET_K, deny)]
    for name in DENIED:
        program += [_instruction(JEQ_K, numbers[name], jf=1), _instruction(RET_K, deny)]
    program += [_instruction(JEQ_K, numbers["clone3"], jf=1), _instruction(RET_K, enosys),
                _instruction(JEQ_K, numbers["clone"], jf=3),
                _instruction(LD_W_ABS, OFFSET_ARG0),        # the low 32 bits of clone's flags
                _instruction(JSET_K, CLONE_NAMESPACE_FLAGS, jf=1),
                _instruction(RET_K, deny),
                _instruction(RET_K, RET_ALLOW)]
    return b"".join(program)
