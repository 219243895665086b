#!/usr/bin/env python3
"""Write the recreated logs of this folder: each in the exact layout of a real log (README.md
names it), with readings of a made-up job. Deterministic: run it from this folder to rewrite
them byte for byte.

    python3 write_recreated_logs.py
"""

import datetime
import random

START = datetime.datetime(2025, 5, 12, 10, 33, 18, 469000)
MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
DAYS = "Mon Tue Wed Thu Fri Sat Sun".split()


def smi_time(t):
    return t.strftime("%Y/%m/%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def busy(rng, poll, period, on):
    """A job busy `on` polls of every `period`, idle otherwise, with noise."""
    if poll % period < on:
        return min(100, 90 + rng.randrange(11))
    return rng.randrange(3)


def no_index(path, gpus, polls, interval_ms, stall_poll):
    """`nvidia-smi --query-gpu=timestamp,power.draw,utilization.gpu,memory.used --format=csv
    -lms N` on several GPUs: each row stamped as read, 11 ms apart on the first poll, within a
    millisecond after, and one GPU read 151 ms late once."""
    rng = random.Random(gpus)
    out = ["timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]"]
    t = START
    for p in range(polls):
        step = 11 if p == 0 else rng.choice([0, 0, 0, 1])
        at = t
        for g in range(gpus):
            if p == stall_poll and g == 1:
                at += datetime.timedelta(milliseconds=151)
            u = busy(rng, p + g % 2, 12, 8)
            w = 70 + 2.3 * u + rng.random() * 4
            out.append(f"{smi_time(at)}, {w:.2f} W, {u} %, {74698 + 29 * g} MiB")
            at += datetime.timedelta(milliseconds=step)
        t = at + datetime.timedelta(milliseconds=interval_ms - step)
    write(path, out)


def coarse(path):
    """`nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,power.draw
    --format=csv -l 10` for an hour: rows 10.002 s apart."""
    rng = random.Random(10)
    out = ["timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]"]
    t = START
    for p in range(360):
        u = busy(rng, p, 30, 20)
        out.append(f"{smi_time(t)}, 0, {u} %, 30112 MiB, {60 + 3 * u:.2f} W")
        t += datetime.timedelta(milliseconds=10002)
    write(path, out)


def unix_seconds(path):
    """A wrapper script's log: `date +%s.%N` for a timestamp, then `--format=csv,noheader,
    nounits` readings of two GPUs."""
    rng = random.Random(2)
    out = ["timestamp,index,utilization.gpu,memory.used,power.draw"]
    t = 1747046000.0
    for p in range(240):
        for g in range(2):
            u = busy(rng, p, 10, 7 if g == 0 else 10)
            out.append(f"{t:.6f},{g},{u},{20000 + g},{50 + 2.5 * u:.2f}")
        t += 0.5
    write(path, out)


def table(path, gpus, tables, interval_s, old):
    """`nvidia-smi` in a loop appending to a file: the date line, the table, the processes."""
    rng = random.Random(7 + gpus)
    width = 79 if old else 91
    out = []
    t = datetime.datetime(2024, 10, 29, 19, 0, 23)
    for k in range(tables):
        out.append(
            f"{DAYS[t.weekday()]} {MONTHS[t.month - 1]} {t.day:2d} {t:%H:%M:%S} {t.year}       "
        )
        out += table_header(old, width)
        for g in range(gpus):
            u = busy(rng, k + 3 * g, 9, 6)
            out += table_gpu(old, g, u, rng)
        out += table_processes(old, width, gpus, k)
        t += datetime.timedelta(seconds=interval_s)
    write(path, out)


def table_header(old, width):
    if old:
        return [
            "+-----------------------------------------------------------------------------+",
            "| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |",
            "|-------------------------------+----------------------+----------------------+",
            "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |",
            "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |",
            "|                               |                      |               MIG M. |",
            "|===============================+======================+======================|",
        ]
    return [
        "+" + "-" * (width - 2) + "+",
        "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]


def table_gpu(old, g, u, rng):
    temp = 40 + u // 5
    watts = 30 + (u * 275) // 100
    mem = 11948 if u > 10 else 0
    pstate = "P0" if u > 10 else "P8"
    if old:
        fan = f"{30 + u // 4}%"
        return [
            f"|   {g}  NVIDIA GeForce ...  Off  | 00000000:{0x3B + g:02X}:00.0 Off |                  N/A |",
            f"| {fan:>3}   {temp}C    {pstate}   {watts:3d}W / 350W |  {mem:5d}MiB / 24268MiB |    {u:3d}%      Default |",
            "|                               |                      |                  N/A |",
            "+-------------------------------+----------------------+----------------------+",
        ]
    return [
        f"|   {g}  NVIDIA L40S                    On  |   00000000:{0x4A + g:02X}:00.0 Off |                    0 |",
        f"| N/A   {temp}C    {pstate}            {watts:3d}W /  350W |   {mem:5d}MiB /  46068MiB |    {u:3d}%      Default |",
        "|                                         |                        |                  N/A |",
        "+-----------------------------------------+------------------------+----------------------+",
    ]


def table_processes(old, width, gpus, k):
    rule = "+" + "-" * (width - 2) + "+"
    rows = [
        " " * width,
        rule,
        "| Processes:" + " " * (width - 13) + "|",
    ]
    if old:
        rows += [
            "|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |",
            "|        ID   ID                                                   Usage      |",
            "|=============================================================================|",
            "|    0   N/A  N/A    3794277      C   python                         11942MiB |",
        ]
    else:
        rows += [
            "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
            "|        ID   ID                                                               Usage      |",
            "|=========================================================================================|",
            "|    0   N/A  N/A   3794277      C   python                                      11942MiB |",
        ]
    return rows + [rule]


def dmon(path, header, unit, row_lead, polls, gpus, start, step_s):
    """`nvidia-smi dmon`: the two header lines, repeated now and then, and a row of each GPU each poll."""
    rng = random.Random(len(header))
    out = []
    t = start
    for p in range(polls):
        if p % 20 == 0:
            out += [header, unit]
        for g in range(gpus):
            u = busy(rng, p + 4 * g, 8, 5)
            pwr = 60 + (u * 240) // 100
            out.append(row_lead(t) + f"{g:5d} {pwr:5d} {40 + u // 6:5d}     - {u:5d} {u // 3:5d}     0     0  9501 {1410 if u else 210:5d}")
        t += datetime.timedelta(seconds=step_s)
    write(path, out)


def dcgmi(path, polls, gpus):
    """`dcgmi dmon -e 203,155,1002,1004,1005 -d 500`: `#Entity` and the units line, repeated every
    14 polls; the line dcgmi writes when stopped with Ctrl-C."""
    rng = random.Random(203)
    head = "#Entity   GPUTL     POWER         SMACT         TENSO         DRAMA         "
    unit = "ID                  W                                                         "
    out = [head, unit]
    for p in range(polls):
        if p and p % 14 == 0:
            out += [head, unit]
        for g in range(gpus):
            u = busy(rng, p + 2 * g, 6, 4)
            sm = 0.0 if u < 5 else u / 100 * 0.8
            out.append(
                f"{'GPU ' + str(g):<10}{u:<10}{100 + 5.5 * u:<14.3f}{sm:<14.3f}{sm * 0.6:<14.3f}"
                f"{sm * 0.4:<14.3f}"
            )
        if p == 3:
            # A MIG instance's row: not a whole GPU, not read.
            out.append(
                f"{'GPU-I 1':<10}{'N/A':<10}{'N/A':<14}{0.25:<14.3f}{0.1:<14.3f}{0.05:<14.3f}"
            )
    out += ["", "", "dmon was stopped do to receiving a signal"]
    write(path, out)


def write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    no_index("no-index-8-gpus-250ms.csv", 8, 240, 250, 100)
    no_index("no-index-2-gpus-100ms.csv", 2, 600, 100, 300)
    coarse("one-gpu-every-10s.csv")
    unix_seconds("unix-seconds-2-gpus.csv")
    table("table-loop-l40s-every-60s.log", 1, 40, 60, False)
    table("table-loop-2-gpus-old-driver.log", 2, 60, 5, True)
    plain = "# gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk"
    plain_unit = "# Idx     W     C     C     %     %     %     %   MHz   MHz"
    dmon("dmon-2-gpus-no-times.log", plain, plain_unit, lambda t: "", 90, 2, START, 1)
    dt = "#Date       Time        gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk"
    dt_unit = "#YYYYMMDD   HH:MM:SS    Idx     W     C     C     %     %     %     %   MHz   MHz"
    dmon("dmon-date-time.log", dt, dt_unit, lambda t: f" {t:%Y%m%d}   {t:%H:%M:%S}  ", 90, 1, START, 2)
    tt = "#Time        gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk"
    tt_unit = "#HH:MM:SS    Idx     W     C     C     %     %     %     %   MHz   MHz"
    late = datetime.datetime(2025, 5, 12, 23, 59, 0)
    dmon("dmon-time-of-day-past-midnight.log", tt, tt_unit, lambda t: f" {t:%H:%M:%S}    ", 120, 1, late, 1)
    dcgmi("dcgmi-dmon-2-gpus.log", 120, 2)


if __name__ == "__main__":
    main()
