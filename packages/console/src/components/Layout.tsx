/**
 * The app frame: a header with the language switch and the user menu, a side
 * navigation (a drawer at phone width), and the page.
 *
 * @since 0.1.0
 */
import {
  ActionIcon,
  AppShell,
  Avatar,
  Badge,
  Burger,
  Group,
  Menu,
  NavLink,
  ScrollArea,
  SegmentedControl,
  Text,
  ThemeIcon,
  Tooltip,
  UnstyledButton,
  useComputedColorScheme,
  useMantineColorScheme
} from "@mantine/core"
import { useDisclosure } from "@mantine/hooks"
import {
  IconBolt,
  IconChartBar,
  IconChartPie,
  IconGauge,
  IconKey,
  IconListSearch,
  IconLock,
  IconLogout,
  IconMessageChatbot,
  IconMoon,
  IconPlug,
  IconReceipt,
  IconServer,
  IconStack2,
  IconSun,
  IconTicket,
  IconUsers,
  IconUsersGroup
} from "@tabler/icons-react"
import { type ReactNode, useState } from "react"
import { NavLink as RouterLink, Outlet, useLocation } from "react-router"
import { type MessageKey, useI18n } from "../lib/i18n.tsx"
import { useSession } from "../lib/session.tsx"
import { ChangePasswordModal } from "../pages/ChangePassword.tsx"
import { Usd } from "./Usd.tsx"

interface Item {
  readonly to: string
  readonly label: MessageKey
  readonly icon: ReactNode
}

const userItems: ReadonlyArray<Item> = [
  { to: "/", label: "nav.dashboard", icon: <IconGauge size={18} /> },
  { to: "/keys", label: "nav.keys", icon: <IconKey size={18} /> },
  { to: "/models", label: "nav.models", icon: <IconStack2 size={18} /> },
  { to: "/connect", label: "nav.connect", icon: <IconPlug size={18} /> },
  { to: "/playground", label: "nav.playground", icon: <IconMessageChatbot size={18} /> },
  { to: "/requests", label: "nav.requests", icon: <IconListSearch size={18} /> },
  { to: "/usage", label: "nav.usage", icon: <IconReceipt size={18} /> }
]

const adminItems: ReadonlyArray<Item> = [
  { to: "/admin/users", label: "nav.users", icon: <IconUsers size={18} /> },
  { to: "/admin/groups", label: "nav.groups", icon: <IconUsersGroup size={18} /> },
  { to: "/admin/channels", label: "nav.channels", icon: <IconServer size={18} /> },
  { to: "/admin/models", label: "nav.adminModels", icon: <IconChartPie size={18} /> },
  { to: "/admin/codes", label: "nav.codes", icon: <IconTicket size={18} /> },
  { to: "/admin/usage", label: "nav.overview", icon: <IconChartBar size={18} /> }
]

/** The language switch. @category components */
export function LanguageSwitch() {
  const { language, setLanguage, t } = useI18n()
  return (
    <SegmentedControl
      size="xs"
      aria-label={t("nav.language")}
      value={language}
      onChange={(value) => setLanguage(value === "zh" ? "zh" : "en")}
      data={[{ value: "en", label: "EN" }, { value: "zh", label: "中文" }]}
    />
  )
}

function ThemeToggle() {
  const { t } = useI18n()
  const { setColorScheme } = useMantineColorScheme()
  const scheme = useComputedColorScheme("light")
  return (
    <Tooltip label={t("nav.theme")}>
      <ActionIcon
        variant="default"
        size="lg"
        aria-label={t("nav.theme")}
        onClick={() => setColorScheme(scheme === "light" ? "dark" : "light")}
      >
        {scheme === "light" ? <IconMoon size={18} /> : <IconSun size={18} />}
      </ActionIcon>
    </Tooltip>
  )
}

/** The frame around every signed-in page. @category components */
export function Layout() {
  const { t } = useI18n()
  const { session, signOut } = useSession()
  const [opened, { toggle, close }] = useDisclosure(false)
  const [passwordOpen, setPasswordOpen] = useState(false)
  const location = useLocation()
  const user = session?.user
  const isActive = (to: string) => to === "/" ? location.pathname === "/" : location.pathname.startsWith(to)
  const link = (item: Item) => (
    <NavLink
      key={item.to}
      component={RouterLink}
      to={item.to}
      label={t(item.label)}
      leftSection={item.icon}
      active={isActive(item.to)}
      onClick={close}
      style={{ borderRadius: 8 }}
    />
  )
  return (
    <AppShell
      header={{ height: 60 }}
      navbar={{ width: 250, breakpoint: "sm", collapsed: { mobile: !opened } }}
      padding="lg"
    >
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Menu" />
            <ThemeIcon size={32} radius="md" variant="gradient" gradient={{ from: "indigo", to: "cyan", deg: 135 }}>
              <IconBolt size={20} />
            </ThemeIcon>
            <Text fw={800} size="lg" visibleFrom="xs">{t("app.name")}</Text>
          </Group>
          <Group gap="sm" wrap="nowrap">
            <LanguageSwitch />
            <ThemeToggle />
            {user && (
              <Menu position="bottom-end" withArrow shadow="md">
                <Menu.Target>
                  <UnstyledButton aria-label={user.name} data-testid="user-menu">
                    <Group gap={8} wrap="nowrap">
                      <Avatar color="indigo" radius="xl" size={34}>{user.name.slice(0, 2).toUpperCase()}</Avatar>
                      <div style={{ lineHeight: 1.1 }}>
                        <Text size="sm" fw={600} visibleFrom="sm">{user.name}</Text>
                        <Text size="xs" c="dimmed" visibleFrom="sm" data-testid="header-balance">
                          <Usd amount={user.balance} />
                        </Text>
                      </div>
                    </Group>
                  </UnstyledButton>
                </Menu.Target>
                <Menu.Dropdown>
                  <Menu.Label>{user.name} {user.role === "admin" && <Badge size="xs" ml={4}>admin</Badge>}</Menu.Label>
                  <Menu.Label>
                    {t("dashboard.balance")}: <Usd amount={user.balance} />
                  </Menu.Label>
                  <Menu.Item leftSection={<IconLock size={16} />} onClick={() => setPasswordOpen(true)}>
                    {t("nav.password")}
                  </Menu.Item>
                  <Menu.Item leftSection={<IconLogout size={16} />} color="red" onClick={() => void signOut()}>
                    {t("nav.signOut")}
                  </Menu.Item>
                </Menu.Dropdown>
              </Menu>
            )}
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="sm">
        <AppShell.Section grow component={ScrollArea}>
          {userItems.map(link)}
          {user?.role === "admin" && (
            <>
              <Text size="xs" fw={700} c="dimmed" tt="uppercase" mt="lg" mb={6} px="sm">{t("nav.admin")}</Text>
              {adminItems.map(link)}
            </>
          )}
        </AppShell.Section>
        <AppShell.Section>
          <Text size="xs" c="dimmed" px="sm">{t("app.tagline")}</Text>
        </AppShell.Section>
      </AppShell.Navbar>
      <AppShell.Main>
        <div style={{ maxWidth: 1200, margin: "0 auto" }}>
          <Outlet />
        </div>
      </AppShell.Main>
      <ChangePasswordModal opened={passwordOpen} onClose={() => setPasswordOpen(false)} />
    </AppShell>
  )
}
