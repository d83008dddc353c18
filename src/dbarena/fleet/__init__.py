"""One study on many hosts through Ansible (`dbarena fleet`).

The controller (controller.py) checks the inventory (inventory.py), builds dbarena's
wheel, and drives the playbooks shipped here: start.yml installs what the study needs
on each host and starts `dbarena fleet host-run` there, detached from the SSH session
(Ansible async); status.yml reads each host's progress (host.py writes it, progress.py
is the reporter that does); fetch.yml brings each host's store back, which is merged
into the controller's store. A task that fails on a host is shown with the host's own
last lines of output (failure.py). With --together, every host is a load generator of
the same point against one server: together.py drives each point (playbooks/together.yml and step.yml),
loadgen.py is a host's share of it, combine.py makes the parts one stored point.
dbarena opens no SSH connection of its own.
"""
