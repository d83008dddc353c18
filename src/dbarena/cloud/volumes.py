"""What a volume comes with at no charge beyond its GB-month, by type and size: the IOPS
(and throughput) that only provisioned IOPS above are billed for. The price list does
not say it (it prices an IOPS-month, not what a volume includes): these rules are AWS's
documentation's, each cited where it stands. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

# EBS gp3: a baseline of 3,000 IOPS and 125 MiB/s at every size, in the storage price;
# more is provisioned and billed apart ("General Purpose SSD volumes", Amazon EBS User
# Guide: https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html#gp3-ebs-volume-type).
EBS_GP3 = (3000, 125)
# RDS gp3 for PostgreSQL and MySQL (and MariaDB, Db2): 3,000 IOPS and 125 MiB/s below
# 400 GiB, which cannot be raised; 12,000 IOPS and 500 MiB/s from 400 GiB, above which
# IOPS may be provisioned ("gp3 storage", Amazon RDS User Guide, "Amazon RDS DB instance
# storage": https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/CHAP_Storage.html#gp3-storage;
# Oracle's threshold is 200 GiB and SQL Server's 20 GiB, engines dbarena does not make).
RDS_GP3_THRESHOLD_GB = 400
RDS_GP3_BELOW = (3000, 125)
RDS_GP3_FROM = (12000, 500)
# io1 and io2 (EBS and RDS) include no IOPS: every provisioned IOPS is billed
# (https://docs.aws.amazon.com/ebs/latest/userguide/provisioned-iops.html,
# https://aws.amazon.com/rds/pricing/); gp2's IOPS come with its size (3 per GiB) and
# are never provisioned.
PROVISIONED_ONLY = ("io1", "io2")
EBS_SOURCE = "https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html#gp3-ebs-volume-type"
RDS_SOURCE = "https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/CHAP_Storage.html#gp3-storage"


@dataclass(frozen=True)
class Included:
    """What a volume of one type and size includes: IOPS, throughput (MiB/s; 0 where it
    does not apply), whether more IOPS can be provisioned at that size, and why."""

    iops: int
    throughput_mibs: int
    provisionable: bool
    why: str
    source: str


def included(part: str, storage: str, size_gb: float) -> Included | None:
    """The rule for a host's volume (part "iops", EBS) or a managed database's storage
    (part "managed_iops", RDS) of `storage` and `size_gb`; None: no rule known here
    (the catalogue's own `included`, if any, stands)."""
    if storage in PROVISIONED_ONLY:
        source = RDS_SOURCE if part == "managed_iops" else "https://docs.aws.amazon.com/ebs/latest/userguide/provisioned-iops.html"
        return Included(0, 0, True, f"{storage} includes no IOPS: every provisioned IOPS is billed", source)
    if storage != "gp3":
        return None
    if part == "managed_iops":
        if size_gb < RDS_GP3_THRESHOLD_GB:
            iops, mibs = RDS_GP3_BELOW
            return Included(iops, mibs, False, f"RDS gp3 below {RDS_GP3_THRESHOLD_GB} GiB: {iops:,} IOPS and "
                            f"{mibs} MiB/s, which cannot be raised", RDS_SOURCE)
        iops, mibs = RDS_GP3_FROM
        return Included(iops, mibs, True, f"RDS gp3 from {RDS_GP3_THRESHOLD_GB} GiB: {iops:,} IOPS and {mibs} MiB/s "
                        "included", RDS_SOURCE)
    iops, mibs = EBS_GP3
    return Included(iops, mibs, True, f"EBS gp3: {iops:,} IOPS and {mibs} MiB/s included at every size", EBS_SOURCE)
