//! The permission table, written out: each admin operation × each standing. Changing who may do
//! what means changing a row here, on purpose.

use super::*;

/// (operation, member, admin, owner, operator)
const TABLE: &[(AdminOp, bool, bool, bool, bool)] = &[
    (AdminOp::ListTenants, false, false, false, true),
    (AdminOp::CreateTenant, false, false, false, true),
    (AdminOp::SetQuotas, false, false, false, true),
    (AdminOp::ConfigureSso, false, false, false, true),
    (AdminOp::DeleteTenant, false, false, false, true),
    (AdminOp::ViewCluster, false, false, false, true),
    (AdminOp::ViewTenant, true, true, true, true),
    (AdminOp::ViewMembers, true, true, true, true),
    (AdminOp::ViewAgents, true, true, true, true),
    (AdminOp::ViewKeys, true, true, true, true),
    (AdminOp::ViewCredentials, true, true, true, true),
    (AdminOp::ViewChannels, true, true, true, true),
    (AdminOp::ViewSessions, true, true, true, true),
    (AdminOp::ViewMemory, true, true, true, true),
    (AdminOp::ViewSkills, true, true, true, true),
    (AdminOp::ViewCron, true, true, true, true),
    (AdminOp::ViewHooks, true, true, true, true),
    (AdminOp::ViewApprovals, true, true, true, true),
    (AdminOp::ViewUsage, true, true, true, true),
    (AdminOp::ViewTokens, true, true, true, true),
    (AdminOp::ViewAudit, false, true, true, true),
    (AdminOp::InviteMembers, false, true, true, true),
    (AdminOp::ChangeRoles, false, true, true, true),
    (AdminOp::RemoveMembers, false, true, true, true),
    (AdminOp::ManageOwners, false, false, true, true),
    (AdminOp::EditAgents, false, true, true, true),
    (AdminOp::ManageKeys, false, true, true, true),
    (AdminOp::ManageCredentials, false, true, true, true),
    (AdminOp::ManageChannels, false, true, true, true),
    (AdminOp::ManageSessions, false, true, true, true),
    (AdminOp::EditMemory, false, true, true, true),
    (AdminOp::EditSkills, false, true, true, true),
    (AdminOp::ManageCron, false, true, true, true),
    (AdminOp::ManageHooks, false, true, true, true),
    (AdminOp::ManageBudgets, false, true, true, true),
    (AdminOp::AnswerApprovals, false, true, true, true),
    (AdminOp::ManageTokens, false, true, true, true),
    (AdminOp::ExportTenant, false, false, true, true),
];

#[test]
fn every_role_and_operation_is_decided_as_the_table_says() {
    for &(op, member, admin, owner, operator) in TABLE {
        let got = [
            allows(Standing::Member(MemberRole::Member), op),
            allows(Standing::Member(MemberRole::Admin), op),
            allows(Standing::Member(MemberRole::Owner), op),
            allows(Standing::Operator, op),
        ];
        assert_eq!(got, [member, admin, owner, operator], "{op}: member, admin, owner, operator");
    }
    let listed: std::collections::HashSet<AdminOp> = TABLE.iter().map(|row| row.0).collect();
    for op in AdminOp::ALL {
        assert!(listed.contains(op), "{op} is missing from the permission table");
    }
    assert_eq!(listed.len(), TABLE.len(), "an operation is listed twice");
}

#[test]
fn a_member_changes_nothing_and_owners_are_the_owners_business() {
    let member = Standing::Member(MemberRole::Member);
    assert!(AdminOp::ALL.iter().filter(|op| !op.is_read()).all(|op| !allows(member, *op)));
    use MemberRole::*;
    assert_eq!(op_for_role_change(None, Some(Member)), AdminOp::InviteMembers);
    assert_eq!(op_for_role_change(None, Some(Owner)), AdminOp::ManageOwners);
    assert_eq!(op_for_role_change(Some(Member), Some(Admin)), AdminOp::ChangeRoles);
    assert_eq!(op_for_role_change(Some(Owner), Some(Admin)), AdminOp::ManageOwners);
    assert_eq!(op_for_role_change(Some(Admin), None), AdminOp::RemoveMembers);
    assert_eq!(op_for_role_change(Some(Owner), None), AdminOp::ManageOwners);
    assert!(!allows(Standing::Member(Admin), op_for_role_change(Some(Owner), None)), "an admin cannot remove an owner");
}

#[test]
fn roles_read_back_from_their_names_and_tokens_never_exceed_their_maker() {
    for role in MemberRole::ALL {
        assert_eq!(role.as_str().parse::<MemberRole>(), Ok(*role));
        assert_eq!(serde_json::to_value(role).unwrap(), serde_json::json!(role.as_str()));
    }
    assert!("root".parse::<MemberRole>().is_err());
    assert_eq!(MemberRole::Owner.min(MemberRole::Member), MemberRole::Member);
    assert_eq!(MemberRole::Member.min(MemberRole::Admin), MemberRole::Member);
}
