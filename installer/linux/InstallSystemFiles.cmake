# SPDX-License-Identifier: Apache-2.0
# Runs at install time (install(CODE)), because the paths inside the units depend on the prefix
# installed to: /usr for the .deb (CPack), /usr/local for a plain `cmake --install`. Expects
# TESSERA_LINUX_DIR (these sources), TESSERA_GENERATED_DIR (a build folder) and
# TESSERA_INSTALL_BINDIR and TESSERA_INSTALL_DATADIR (relative, from GNUInstallDirs).
set(prefix "${CMAKE_INSTALL_PREFIX}")
# GNUInstallDirs' rule: /usr's configuration lives in /etc, any other prefix's in PREFIX/etc.
if(prefix STREQUAL "/usr")
    set(TESSERA_SYSCONFDIR "/etc")
else()
    set(TESSERA_SYSCONFDIR "${prefix}/etc")
endif()
set(TESSERA_BINDIR "${prefix}/${TESSERA_INSTALL_BINDIR}")
set(TESSERA_DOCDIR "${prefix}/${TESSERA_INSTALL_DATADIR}/doc/tessera")

set(out "${TESSERA_GENERATED_DIR}/${prefix}")
configure_file("${TESSERA_LINUX_DIR}/tessera-coordinator.service.in" "${out}/tessera-coordinator.service" @ONLY)
configure_file("${TESSERA_LINUX_DIR}/tessera-node.service.in" "${out}/tessera-node.service" @ONLY)
configure_file("${TESSERA_LINUX_DIR}/sysusers.conf" "${out}/sysusers.d/tessera.conf" COPYONLY)
configure_file("${TESSERA_LINUX_DIR}/tmpfiles.conf" "${out}/tmpfiles.d/tessera.conf" COPYONLY)

# systemd looks for units, sysusers.d and tmpfiles.d in PREFIX/lib (never lib64 or a multiarch
# directory), for /usr and /usr/local alike.
set(perm PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(INSTALL "${out}/tessera-coordinator.service" DESTINATION "${prefix}/lib/systemd/system" ${perm})
file(INSTALL "${out}/tessera-node.service" DESTINATION "${prefix}/lib/systemd/user" ${perm})
file(INSTALL "${out}/sysusers.d/tessera.conf" DESTINATION "${prefix}/lib/sysusers.d" ${perm})
file(INSTALL "${out}/tmpfiles.d/tessera.conf" DESTINATION "${prefix}/lib/tmpfiles.d" ${perm})
file(INSTALL "${TESSERA_LINUX_DIR}/coordinator.conf" DESTINATION "${TESSERA_SYSCONFDIR}/tessera" ${perm})
# The desktop app's packaged defaults (manager/AppSettings: packagedDefaultsPath).
file(INSTALL "${TESSERA_LINUX_DIR}/tessera.ini" DESTINATION "${TESSERA_SYSCONFDIR}/tessera" ${perm})
