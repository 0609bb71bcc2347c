# SPDX-License-Identifier: Apache-2.0
# Extra NSIS commands (configured, untested here). Included by installer/CMakeLists.txt on Windows.
#
# Uninstall: "start at login" is a value in HKCU\...\Run that the app writes for the user who
# turned it on (core/manager/Autostart); remove it so that Windows does not try to start a
# program that is gone. The user's data (%LOCALAPPDATA%\Tessera: node key, shard, credit ledger)
# is not touched, by uninstall or by upgrade.
set(CPACK_NSIS_EXTRA_UNINSTALL_COMMANDS [=[
  DeleteRegValue HKCU "Software\Microsoft\Windows\CurrentVersion\Run" "Tessera"
]=])
# A running app or node holds its files open: stop them before files are replaced or removed.
set(CPACK_NSIS_EXTRA_PREINSTALL_COMMANDS [=[
  nsExec::Exec 'taskkill /IM tessera.exe /T'
  nsExec::Exec 'taskkill /IM tessera-node.exe /T'
]=])
string(APPEND CPACK_NSIS_EXTRA_UNINSTALL_COMMANDS [=[
  nsExec::Exec 'taskkill /IM tessera.exe /T'
  nsExec::Exec 'taskkill /IM tessera-node.exe /T'
]=])
